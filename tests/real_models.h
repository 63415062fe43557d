// The real models Kestrel is checked against ONNX Runtime on, each with the
// real input it is fed (a photo prepared the way the model's users prepare it,
// or a voiced waveform) and the agreement it must reach.
// scripts/fetch_models.sh downloads the models and photos into models/.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace kestrel::real_models {

struct RealModel {
  std::string name;           // test name: "ppocrv4_det"
  std::string file;           // under models/
  std::string preprocessing;  // the input recipe in words
  // Builds the model's inputs from files under the models folder.
  std::function<std::map<std::string, Tensor>(const std::string& models_dir)> inputs;
  // Every output must reach cosine >= min_cosine and
  // max_abs <= rel * max|ref| + atol (see Agreement in core/compare.h).
  double min_cosine = 0.99999;
  double rel = 1e-4;
  double atol = 1e-5;
  // With float16 storage on the Vulkan backend every float16 node's output
  // is rounded to float16 (2^-11 relative), compounding through the network;
  // the first run keeps float16 only where the outputs stay within cosine
  // 0.9999 and 3% of their range of float32's (precision_plan.h).
  double fp16_min_cosine = 0.9999;
  double fp16_rel = 3e-2;
  double fp16_atol = -1;  // < 0: atol
  // Non-empty: why the float16-storage configuration is not run in ctest.
  std::string fp16_not_run;
  // Non-empty: why neither Vulkan configuration is run in ctest (a model
  // whose lavapipe runs cost too much of CI's two cores). Both configurations
  // run with KESTREL_LONG_TESTS=1, as does a skipped float16 one; on a GPU
  // they take seconds.
  std::string vulkan_not_run;
  // Non-empty: why the CPU's reference-kernels configuration is not run in
  // ctest (another input of a model whose reference run is checked already).
  std::string reference_kernels_not_run;
  // When >= 0, the bounds for the Vulkan backend in either precision.
  double gpu_min_cosine = -1, gpu_rel = -1;
};

const std::vector<RealModel>& all();

// $KESTREL_MODELS if set, else models/ in the source tree.
std::string models_dir();

// A deterministic speech-like signal in [-0.5, 0.5]: a glottal-pulse-like
// harmonic series on a gliding pitch, shaped by vowel formants, in syllables.
std::vector<float> voiced_waveform(int sample_rate, int samples);

}  // namespace kestrel::real_models

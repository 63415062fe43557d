// Runs a model on ONNX Runtime (CPU execution provider) through
// tools/ort_reference.js and node, for parity checks and benchmarks.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace kestrel {

struct OrtTimes {
  double min_ms = 0, median_ms = 0, max_ms = 0;
};

struct OrtResult {
  std::vector<Tensor> outputs;  // in the model's output order
  std::optional<OrtTimes> times;  // with bench_runs > 0
};

// tools/ort_reference.js under $KESTREL_HOME, else under `source_dir` (the
// source tree Kestrel was built from). Throws when neither has it.
std::string find_ort_script(const std::string& source_dir);

// Writes `inputs` as .npy files to a temporary folder, runs
//   node SCRIPT MODEL OUTDIR NAME=FILE.npy... --threads N [--bench RUNS]
// and reads back the outputs. threads 0 leaves ONNX Runtime's default.
// Throws with the script's exit status when it fails (its stderr passes through).
OrtResult run_onnxruntime(const std::string& script, const std::string& model,
                          const std::map<std::string, Tensor>& inputs, int threads, int bench_runs = 0);

}  // namespace kestrel

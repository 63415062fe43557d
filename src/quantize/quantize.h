// `kestrel quantize`: static int8 quantization of a float model from
// calibration samples. The samples run through Kestrel (CPU) with every
// quantized node's input as an extra output; each input's range comes from
// them (min/max, or a percentile that ignores rare outliers); the model is
// written in ONNX's QDQ form (qdq_graph.h); then the quantized model runs on
// some of the samples beside the original and each output's agreement is
// reported, so a user sees what quantization cost before shipping it.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "runtime/session_options.h"

namespace kestrel::quantize {

enum class Method { MinMax, Percentile, Entropy };
Method parse_method(const std::string& name);  // "minmax", "percentile" or "entropy"
const char* name_of(Method m);

struct Options {
  Method method = Method::MinMax;
  double percentile = 99.999;  // Percentile: the share of values inside the range, at each end
  // Weights per output channel (DequantizeLinear's axis, opset 13: an older
  // model is converted). Unset: per channel where the conversion succeeds,
  // per tensor where it fails.
  std::optional<bool> per_channel;
  int check_samples = 8;      // how many samples the agreement report runs
  // The lowest cosine against the float model an output may reach on those
  // samples: below it, the nodes nearest the outputs stay in float (0: all
  // quantized whatever it costs).
  double min_cosine = 0.99;
  // MatMuls' constant weights in 4-bit blocks, their activations left float
  // (com.microsoft MatMulNBits: qdq_graph.h); Convs and Gemms as above.
  bool int4_weights = false;
  // int8 weights within [-64, 64] instead of [-127, 127] (quant_params.h:
  // kReducedRange), for ONNX Runtime on x86 CPUs without VNNI, whose int8
  // products saturate otherwise. Kestrel's are exact either way.
  bool reduce_range = false;
  SessionOptions session;     // for the calibration and check runs
};

// Sample i's inputs, by name.
using SampleSource = std::function<std::map<std::string, Tensor>(size_t i)>;
// Called as work advances: ("calibrating", 3, 100).
using Progress = std::function<void(const char* stage, size_t done, size_t total)>;

struct OutputAgreement {
  std::string name;
  double min_cosine = 1, mean_cosine = 1, max_rel = 0;  // over the checked samples
};

struct Report {
  std::string model;                   // the QDQ model's bytes
  int quantized_nodes = 0, opset = 0;  // opset: the written model's
  int int4_nodes = 0;                  // of those, MatMuls with 4-bit weights
  int converted_from = 0;              // the source opset, when the model was converted
  std::vector<std::string> notes;      // what the user should know (a failed conversion)
  bool per_channel = false;
  std::vector<std::string> skipped;    // nodes of quantizable ops left in float, and why
  std::vector<OutputAgreement> outputs;  // of the written model
  size_t checked_samples = 0;
  double worst_cosine = 1;  // the written model's lowest output cosine
  double full_cosine = 1;   // the same with every quantizable node quantized
};

Report quantize_model(const std::string& path, size_t samples, const SampleSource& sample, const Options& opt,
                      const Progress& progress);

}  // namespace kestrel::quantize

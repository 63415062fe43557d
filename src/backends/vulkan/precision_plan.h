// Mixed precision on the Vulkan backend: which nodes compute and store their
// float outputs in float16, decided per node from measured values, so that
// float16 storage is never silently wrong.
//
// A graph compiled for float16 first runs in float32 and records, for every
// float value, its largest finite magnitude and a strided sample. A node goes
// to float16 only where every float value it reads or writes stays within
// kHalfRange (float16 ends at 65504; the margin covers other inputs). A
// mixed run then records the same samples; the outputs must agree with the
// float32 ones (kMinCosine, kMaxAbsOfRange). Where they do not, the nodes
// that bring the error in go back to float32: a float16 node whose output
// error exceeds kNodeError and at least doubles its inputs' error, and the
// float16 producers of any node (float32 or not) that amplifies its inputs'
// error so (cancellation: x + 2048 - 2048 loses x in the add, shows in the
// subtract). When no node stands out, or after kTargetedRounds, and the
// outputs still disagree, the error is spread thin: float16 stays on the
// longest prefix of its nodes (graph order) that agrees, found by halving
// (kBisectSteps runs), and the nodes nearest the outputs go back to float32.
// Tensors crossing between a float16 and a float32 node are converted on the
// device (shaders/convert_float.comp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace kestrel::vulkan {

constexpr double kHalfRange = 4096;  // 16x below float16's largest finite value
constexpr double kNodeError = 1e-2;  // relative L2 error a node may bring in before it is suspected
constexpr double kMinCosine = 0.9999, kMaxAbsOfRange = 3e-2;  // a mixed run's outputs against float32's
constexpr int kTargetedRounds = 2;  // sampled mixed runs that move the nodes bringing error in
constexpr int kBisectSteps = 5;     // then mixed runs halving the float16 prefix (1/32 of its nodes)
constexpr int64_t kSampleSize = 4096;  // elements sampled per value

// What one run saw of one float value.
struct ValueSample {
  bool seen = false;
  double max_abs = 0;      // of its finite elements
  int64_t numel = 0;
  std::vector<float> sample;  // elements 0, s, 2s, ... (s = ceil(numel / kSampleSize))
};
ValueSample sample_of(const Tensor& t);  // float tensors; others are left unseen

// Relative L2 error of `got` against `ref` over their samples (0 when either
// is unseen or they differ in size; infinity where one is NaN or infinite
// and the other is not).
double relative_error(const ValueSample& ref, const ValueSample& got);

// Per node: compute and store float outputs in float16.
struct PrecisionPlan {
  bool decided = false;       // false: not calibrated yet (every node float32)
  std::vector<uint8_t> half;  // by node
  std::vector<std::string> kept_fp32;  // why nodes that could be float16 are not, one line each
  std::string note;           // for the placement report
  size_t half_nodes() const;
};

// How a node may take float16 storage (by node, for plan_from_ranges).
enum class HalfEligibility : uint8_t {
  No,             // not a GPU node
  Yes,            // its float inputs and outputs are stored as float16
  Float32Outputs, // its float outputs stay float32 (VkOpDef::float32_outputs)
};

// The first plan from a float32 run's samples (by value id): float16 for the
// eligible nodes whose float inputs and outputs (inputs only, for
// Float32Outputs) stay within kHalfRange. Initializers' ranges are read
// from the graph.
PrecisionPlan plan_from_ranges(const ir::Graph& g, const std::vector<HalfEligibility>& eligible,
                               const std::vector<ValueSample>& fp32);

// Moves the nodes that bring the error in (above) back to float32; false when
// no node stands out.
bool promote(const ir::Graph& g, PrecisionPlan& plan, const std::vector<ValueSample>& fp32,
             const std::vector<ValueSample>& mixed);

// "" when a mixed run's output agrees with the float32 one, else how it does
// not; `cosine`, when given, gets their cosine.
std::string output_disagreement(const Tensor& fp32, const Tensor& mixed, double* cosine = nullptr);

}  // namespace kestrel::vulkan

// The recurrent ops (LSTM, GRU, RNN): no Vulkan kernel, so these cases check
// the CPU backend's fast products against the reference kernels. Each step
// multiplies the state by R (a product with few rows: the narrow kernels);
// the inputs' projection is one product over every step. Both directions,
// initial states, sequence lengths shorter than the sequence, and sizes off
// the kernels' blocks.
//
// Tolerances: float32 sums in a different order, carried through up to 9
// steps of tanh and sigmoid (which do not amplify errors): the defaults.
#include "harness.h"

namespace kestrel::backend_ops {
namespace {

const char* kNoKernel = "the recurrent ops run on the CPU";

InputSpec lens(const std::vector<int32_t>& v) {
  Tensor t(DType::Int32, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int32_t>()[i] = v[i];
  InputSpec s;
  s.name = "lens";
  s.shape = t.shape();
  s.dtype = DType::Int32;
  s.value = t;
  s.initializer = true;
  return s;
}

std::vector<OpCase> cases() {
  std::vector<OpCase> v;
  // seq 9, batch 3, input 21, hidden 13; gates 4 (LSTM), 3 (GRU), 1 (RNN).
  v.push_back({.label = "forward, biases", .op = "LSTM", .opset = 14,
               .inputs = {rnd("x", {9, 3, 21}), weight("w", {1, 52, 21}), weight("r", {1, 52, 13}),
                          weight("b", {1, 104})},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "hidden_size", 13); },
               .outputs = 3, .no_vulkan_kernel = kNoKernel});
  v.push_back({.label = "bidirectional, lengths, initial states", .op = "LSTM", .opset = 14,
               .inputs = {rnd("x", {9, 3, 21}), weight("w", {2, 52, 21}), weight("r", {2, 52, 13}),
                          weight("b", {2, 104}), lens({9, 4, 7}), rnd("h0", {2, 3, 13}), rnd("c0", {2, 3, 13})},
               .attrs = [](onnx::NodeProto& n) {
                 attr_i(n, "hidden_size", 13);
                 attr_s(n, "direction", "bidirectional");
               },
               .outputs = 3, .no_vulkan_kernel = kNoKernel});
  v.push_back({.label = "wide hidden 200, batch 1", .op = "LSTM", .opset = 14,
               .inputs = {rnd("x", {5, 1, 64}), weight("w", {1, 800, 64}, -0.2f, 0.2f),
                          weight("r", {1, 800, 200}, -0.2f, 0.2f)},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "hidden_size", 200); },
               .outputs = 3, .no_vulkan_kernel = kNoKernel});
  v.push_back({.label = "forward", .op = "GRU", .opset = 14,
               .inputs = {rnd("x", {9, 3, 21}), weight("w", {1, 39, 21}), weight("r", {1, 39, 13}),
                          weight("b", {1, 78})},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "hidden_size", 13); },
               .outputs = 2, .no_vulkan_kernel = kNoKernel});
  v.push_back({.label = "reverse, linear_before_reset", .op = "GRU", .opset = 14,
               .inputs = {rnd("x", {9, 3, 21}), weight("w", {1, 39, 21}), weight("r", {1, 39, 13}),
                          weight("b", {1, 78}), absent(), rnd("h0", {1, 3, 13})},
               .attrs = [](onnx::NodeProto& n) {
                 attr_i(n, "hidden_size", 13);
                 attr_s(n, "direction", "reverse");
                 attr_i(n, "linear_before_reset", 1);
               },
               .outputs = 2, .no_vulkan_kernel = kNoKernel});
  v.push_back({.label = "bidirectional tanh", .op = "RNN", .opset = 14,
               .inputs = {rnd("x", {9, 3, 21}), weight("w", {2, 13, 21}), weight("r", {2, 13, 13}),
                          weight("b", {2, 26})},
               .attrs = [](onnx::NodeProto& n) {
                 attr_i(n, "hidden_size", 13);
                 attr_s(n, "direction", "bidirectional");
               },
               .outputs = 2, .no_vulkan_kernel = kNoKernel});
  return v;
}

const bool registered = add_cases(cases());

}  // namespace
}  // namespace kestrel::backend_ops

// Quantization ops: DynamicQuantizeLinear's range, scale, zero point and
// packed uint8 output (sizes that are not multiples of 4 leave a partial word).
#include "harness.h"

namespace kestrel::backend_ops {
namespace {

std::vector<OpCase> cases() {
  std::vector<OpCase> v;
  // y may differ by one step where x / scale lands within an ulp of .5: the
  // GPU's division is not required to be correctly rounded.
  v.push_back({.label = "DynamicQuantizeLinear mixed signs [3,37,41]", .op = "DynamicQuantizeLinear", .opset = 11,
               .inputs = {rnd("x", {3, 37, 41}, -2, 5)}, .outputs = 3, .fp16_abs = 1e-2, .int_tolerance = 1});
  v.push_back({.label = "DynamicQuantizeLinear all positive [1,1000003]", .op = "DynamicQuantizeLinear", .opset = 11,
               .inputs = {rnd("x", {1, 1000003}, 0.5f, 3)}, .outputs = 3, .int_tolerance = 1});
  v.push_back({.label = "DynamicQuantizeLinear 5 elements", .op = "DynamicQuantizeLinear", .opset = 11,
               .inputs = {rnd("x", {5}, -1, 0)}, .outputs = 3, .int_tolerance = 1});
  // ConvInteger: uint8 activations with a zero point, int8 or uint8 weights
  // with a per-tensor or per-channel zero point; sums are exact int32.
  auto u8 = [](InputSpec s) { s.dtype = DType::UInt8; return s; };
  auto i8 = [](InputSpec s) { s.dtype = DType::Int8; return s; };
  v.push_back({.label = "ConvInteger 3x3 pad 1 uint8 x, int8 w", .op = "ConvInteger", .opset = 10,
               .inputs = {u8(rnd("x", {1, 5, 13, 11}, 0, 256)), i8(weight("w", {7, 5, 3, 3}, -128, 128)),
                          u8(rnd("xz", {}, 0, 256))},
               .attrs = [](onnx::NodeProto& n) { attr_ints(n, "pads", {1, 1, 1, 1}); }});
  v.push_back({.label = "ConvInteger stride 2, uint8 w per-channel zp", .op = "ConvInteger", .opset = 10,
               .inputs = {u8(rnd("x", {2, 6, 17, 16}, 0, 256)), u8(weight("w", {40, 6, 3, 3}, 0, 256)),
                          u8(rnd("xz", {}, 0, 256)), u8(weight("wz", {40}, 0, 256))},
               .attrs = [](onnx::NodeProto& n) { attr_ints(n, "strides", {2, 2}); }});
  v.push_back({.label = "ConvInteger 1x1 groups 2, no zero points", .op = "ConvInteger", .opset = 10,
               .inputs = {u8(rnd("x", {1, 8, 9, 9}, 0, 256)), i8(weight("w", {6, 4, 1, 1}, -128, 128))},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "group", 2); }});
  return v;
}

const bool registered = add_cases(cases());

}  // namespace
}  // namespace kestrel::backend_ops

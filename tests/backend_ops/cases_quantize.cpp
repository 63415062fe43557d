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
  return v;
}

const bool registered = add_cases(cases());

}  // namespace
}  // namespace kestrel::backend_ops

// GEMM, normalization and reduction ops: sizes that are not multiples of the
// kernels' tiles, broadcast batches, transposes, and each axis choice.
//
// Tolerances. float32: the device sums in a different order than the CPU
// (oneDNN, double accumulators), so results differ by a few ulps times
// sqrt(length): NMSE ~1e-13, far under the default 1e-9. float16 storage:
// inputs and outputs are rounded to 11 bits (relative error <= 4.9e-4 each),
// so a K-long dot product of random-signed terms has NMSE ~3e-7 and a
// max error ~1e-3 relative to the largest output: the defaults (1e-5, 1e-2)
// hold with margin.
#include "harness.h"

namespace kestrel::backend_ops {
namespace {

std::vector<OpCase> gemm_cases() {
  std::vector<OpCase> v;
  v.push_back({.label = "2-D odd 37x53 @ 53x29", .op = "MatMul", .inputs = {rnd("a", {37, 53}), rnd("b", {53, 29})}});
  v.push_back({.label = "batched broadcast [2,3,17,33]@[33,9]", .op = "MatMul",
               .inputs = {rnd("a", {2, 3, 17, 33}), weight("b", {33, 9})}});
  v.push_back({.label = "batch broadcast both [2,1,5,7]@[3,7,6]", .op = "MatMul",
               .inputs = {rnd("a", {2, 1, 5, 7}), rnd("b", {3, 7, 6})}});
  v.push_back({.label = "shared A [13,20]@[4,20,11]", .op = "MatMul",
               .inputs = {rnd("a", {13, 20}), rnd("b", {4, 20, 11})}});
  v.push_back({.label = "1-D x 2-D [40]@[40,23]", .op = "MatMul", .inputs = {rnd("a", {40}), rnd("b", {40, 23})}});
  v.push_back({.label = "2-D x 1-D [23,40]@[40]", .op = "MatMul", .inputs = {rnd("a", {23, 40}), rnd("b", {40})}});
  v.push_back({.label = "1-D x 1-D [70]@[70]", .op = "MatMul", .inputs = {rnd("a", {70}), rnd("b", {70})}});
  v.push_back({.label = "several tiles 200x150 @ 150x300", .op = "MatMul",
               .inputs = {rnd("a", {200, 150}), weight("b", {150, 300})}});
  v.push_back({.label = "Gemm [N] bias", .op = "Gemm", .inputs = {rnd("a", {19, 45}), weight("b", {45, 70}), weight("c", {70})}});
  v.push_back({.label = "Gemm transA transB alpha beta", .op = "Gemm",
               .inputs = {rnd("a", {45, 19}), weight("b", {70, 45}), weight("c", {19, 70})},
               .attrs = [](onnx::NodeProto& n) {
                 attr_i(n, "transA", 1);
                 attr_i(n, "transB", 1);
                 attr_f(n, "alpha", 0.5f);
                 attr_f(n, "beta", -2.f);
               }});
  v.push_back({.label = "Gemm transB, C [M,1]", .op = "Gemm",
               .inputs = {rnd("a", {66, 17}), weight("b", {130, 17}), weight("c", {66, 1})},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "transB", 1); }});
  v.push_back({.label = "Gemm transA, no C", .op = "Gemm", .inputs = {rnd("a", {33, 65}), rnd("b", {33, 31})},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "transA", 1); }});
  v.push_back({.label = "Gemm beta 0 ignores C", .op = "Gemm",
               .inputs = {rnd("a", {5, 9}), rnd("b", {9, 4}), rnd("c", {5, 4})},
               .attrs = [](onnx::NodeProto& n) { attr_f(n, "beta", 0.f); }});
  v.push_back({.label = "Gemm several tiles 200x300x150", .op = "Gemm",
               .inputs = {rnd("a", {200, 150}), weight("b", {150, 300}), weight("c", {300})}});
  return v;
}

const bool registered = add_cases(gemm_cases());

}  // namespace
}  // namespace kestrel::backend_ops

// GEMM, normalization and reduction ops: sizes that are not multiples of the
// kernels' tiles, broadcast batches, transposes, and each axis choice.
//
// Tolerances. float32: the device and the CPU's fast products (oneDNN) sum in
// another order than the reference (float in k order; double accumulators
// for the normalizations), so results differ by a few ulps times
// sqrt(length): NMSE ~1e-13, far under the default 1e-9. float16 storage:
// inputs and outputs are rounded to 11 bits (relative error <= 4.9e-4 each),
// so a K-long dot product of random-signed terms has NMSE ~3e-7 and a
// max error ~1e-3 relative to the largest output: the defaults (1e-5, 1e-2)
// hold with margin.
#include <tuple>

#include "harness.h"
#include "ops/activation.h"

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
  // 1.1e9 multiply-adds: past one dispatch's budget, so row tiles go in bands (the deliberately large case).
  v.push_back({.label = "Gemm split over dispatches 1100x1000x1000", .op = "Gemm",
               .inputs = {rnd("a", {1100, 1000}), weight("b", {1000, 1000}), weight("c", {1000})}});
  // Rows of multiples of 8 elements, 16-byte aligned: the tensor-core GEMM
  // reads these 8 halves at a time (gemm_coop.comp's A_VEC and B_VEC), along
  // whichever index has unit stride; edge tiles and a last partial K chunk included.
  v.push_back({.label = "8-wide rows 136x264 @ 264x200", .op = "MatMul",
               .inputs = {rnd("a", {136, 264}), weight("b", {264, 200})}});
  v.push_back({.label = "8-wide rows batched [3,40,64]@[3,64,48]", .op = "MatMul",
               .inputs = {rnd("a", {3, 40, 64}), rnd("b", {3, 64, 48})}});
  v.push_back({.label = "8-wide rows Gemm transA transB + bias", .op = "Gemm",
               .inputs = {rnd("a", {96, 72}), weight("b", {136, 96}), weight("c", {136})},
               .attrs = [](onnx::NodeProto& n) {
                 attr_i(n, "transA", 1);
                 attr_i(n, "transB", 1);
               }});
  // Fused activations, as the fusion pass records them on the node.
  v.push_back({.label = "Gemm + bias + fused x*Sigmoid(x)", .op = "Gemm",
               .inputs = {rnd("a", {37, 29}), weight("b", {29, 41}), weight("c", {41})},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "kestrel.activation", int64_t(ops::Activation::Silu)); }});
  v.push_back({.label = "MatMul batched + fused GELU", .op = "MatMul",
               .inputs = {rnd("a", {2, 19, 23}), weight("b", {23, 31})},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "kestrel.activation", int64_t(ops::Activation::GeluErf)); }});
  v.push_back({.label = "MatMul + fused Clip(0, 0.5)", .op = "MatMul", .inputs = {rnd("a", {17, 33}), rnd("b", {33, 9})},
               .attrs = [](onnx::NodeProto& n) {
                 attr_i(n, "kestrel.activation", int64_t(ops::Activation::Clip));
                 attr_floats(n, "kestrel.activation_params", {0.f, 0.5f});
               }});
  // Einsum lowers to batched products; it has no Vulkan kernel.
  for (auto [label, eq, a, b] : std::vector<std::tuple<const char*, const char*, Shape, Shape>>{
           {"Einsum batched bij,bjk->bik", "bij,bjk->bik", {3, 17, 29}, {3, 29, 11}},
           {"Einsum transposed ij,kj->ik", "ij,kj->ik", {23, 40}, {31, 40}},
           {"Einsum attention bhid,bhjd->bhij", "bhid,bhjd->bhij", {2, 3, 19, 16}, {2, 3, 21, 16}}}) {
    std::string equation = eq;
    v.push_back({.label = label, .op = "Einsum", .opset = 12, .inputs = {rnd("a", a), rnd("b", b)},
                 .attrs = [equation](onnx::NodeProto& n) { attr_s(n, "equation", equation); },
                 .no_vulkan_kernel = "Einsum runs on the CPU"});
  }
  return v;
}

std::vector<OpCase> softmax_cases() {
  std::vector<OpCase> v;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    v.push_back({.label = "last axis [3,5,77]", .op = op, .inputs = {rnd("x", {3, 5, 77}, -6, 6)}});
    v.push_back({.label = "middle axis odd [2,13,9]", .op = op, .inputs = {rnd("x", {2, 13, 9}, -6, 6)},
                 .attrs = [](onnx::NodeProto& n) { attr_i(n, "axis", 1); }});
    v.push_back({.label = "long rows [4,1000]", .op = op, .inputs = {rnd("x", {4, 1000}, -10, 10)}});
    // YOLOv8's box decoding (axis 1 of [1, 16, 4, anchors]): the CPU's tasks of
    // 256 columns, the last one partial.
    v.push_back({.label = "axis 1 of [2,16,4,300]", .op = op, .inputs = {rnd("x", {2, 16, 4, 300}, -8, 8)},
                 .attrs = [](onnx::NodeProto& n) { attr_i(n, "axis", 1); }});
    // Past the 4,096 elements a Vulkan row keeps in registers (shaders/rows.glsl): read once per pass.
    v.push_back({.label = "rows past the register cache [2,5000]", .op = op, .inputs = {rnd("x", {2, 5000}, -10, 10)}});
    v.push_back({.label = "opset 11 flattens at axis 1 [2,3,5,7]", .op = op, .opset = 11,
                 .inputs = {rnd("x", {2, 3, 5, 7}, -6, 6)}});
    // UltraFace's scores (rows of 2): the CPU's short rows, transposed 256
    // rows at a time, the last block partial; and the longest such rows.
    v.push_back({.label = "short rows [1,601,2]", .op = op, .inputs = {rnd("x", {1, 601, 2}, -8, 8)}});
    v.push_back({.label = "short rows [300,8]", .op = op, .inputs = {rnd("x", {300, 8}, -8, 8)}});
  }
  return v;
}

std::vector<OpCase> norm_cases() {
  std::vector<OpCase> v;
  v.push_back({.label = "last axis [2,7,96] + bias", .op = "LayerNormalization",
               .inputs = {rnd("x", {2, 7, 96}, -3, 3), weight("s", {96}), weight("b", {96})}});
  v.push_back({.label = "last 2 axes [3,5,33], no bias", .op = "LayerNormalization",
               .inputs = {rnd("x", {3, 5, 33}, -3, 3), weight("s", {5, 33})},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "axis", -2); }});
  v.push_back({.label = "last 2 axes, scale broadcast [33]", .op = "LayerNormalization",
               .inputs = {rnd("x", {3, 5, 33}, -3, 3), weight("s", {33}), weight("b", {1, 33})},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "axis", 1); attr_f(n, "epsilon", 1e-3f); }});
  v.push_back({.label = "Mean and InvStdDev outputs", .op = "LayerNormalization",
               .inputs = {rnd("x", {4, 600}, 0, 4), weight("s", {600}), weight("b", {600})}, .outputs = 3});
  v.push_back({.label = "[2,3,9,11]", .op = "InstanceNormalization",
               .inputs = {rnd("x", {2, 3, 9, 11}, -2, 3), weight("s", {3}), weight("b", {3})}});
  v.push_back({.label = "3-D [2,5,700]", .op = "InstanceNormalization",
               .inputs = {rnd("x", {2, 5, 700}, -2, 3), weight("s", {5}), weight("b", {5})}});
  v.push_back({.label = "[2,6,7,5]", .op = "BatchNormalization", .opset = 15,
               .inputs = {rnd("x", {2, 6, 7, 5}), weight("s", {6}), weight("b", {6}), weight("m", {6}),
                          weight("v", {6}, 0.5f, 2)}});
  v.push_back({.label = "2-D [9,13] eps 1e-3", .op = "BatchNormalization", .opset = 9,
               .inputs = {rnd("x", {9, 13}), weight("s", {13}), weight("b", {13}), weight("m", {13}),
                          weight("v", {13}, 0.5f, 2)},
               .attrs = [](onnx::NodeProto& n) { attr_f(n, "epsilon", 1e-3f); }});
  v.push_back({.label = "opset 7 spatial=0 [2,3,4,5]", .op = "BatchNormalization", .opset = 7,
               .inputs = {rnd("x", {2, 3, 4, 5}), weight("s", {3, 4, 5}), weight("b", {3, 4, 5}),
                          weight("m", {3, 4, 5}), weight("v", {3, 4, 5}, 0.5f, 2)},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "spatial", 0); }});
  return v;
}

// Each reduction over the first, a middle, the last and all axes of an odd
// [5,6,37] tensor (NCHW spatial axes separately), keepdims 1 and 0.
std::vector<OpCase> reduce_cases() {
  std::vector<OpCase> v;
  struct R {
    const char* op;
    float lo, hi;
    int axes_input_from;
  };
  // Prod: values near 1 keep the 1110-long product (all axes) inside float16 range.
  for (R r : {R{"ReduceMean", -1, 1, 18}, R{"ReduceSum", -1, 1, 13}, R{"ReduceMax", -1, 1, 18},
              R{"ReduceMin", -1, 1, 18}, R{"ReduceProd", 0.95f, 1.05f, 18}, R{"ReduceL2", -1, 1, 18},
              R{"ReduceSumSquare", -1, 1, 18}, R{"ReduceLogSumExp", -5, 5, 18}, R{"ReduceL1", -1, 1, 18},
              R{"ReduceLogSum", 0.1f, 1, 18}}) {
    struct A {
      const char* what;
      std::vector<int64_t> axes;
      Shape shape;
    };
    for (A a : {A{"first", {0}, {5, 6, 37}}, A{"middle", {1}, {5, 6, 37}}, A{"last", {-1}, {5, 6, 37}},
                A{"all", {}, {5, 6, 37}}, A{"first+last", {0, 2}, {5, 6, 37}},
                A{"NCHW spatial", {2, 3}, {2, 8, 9, 11}}, A{"middle wide", {1}, {3, 17, 1100}}}) {
      for (int keep : {1, 0}) {
        OpCase c{.label = std::string(a.what) + " axes keepdims " + std::to_string(keep), .op = r.op};
        c.inputs = {rnd("x", a.shape, r.lo, r.hi)};
        std::vector<int64_t> axes = a.axes;
        // Opset 18 (13 for ReduceSum) takes the axes as an input; test the attribute form at opset 13.
        bool as_input = keep == 1;
        c.opset = as_input ? 18 : (r.axes_input_from == 13 ? 11 : 13);
        if (as_input && !axes.empty()) c.inputs.push_back(ints("axes", axes));
        c.attrs = [axes, keep, as_input](onnx::NodeProto& n) {
          attr_i(n, "keepdims", keep);
          if (!as_input && !axes.empty()) attr_ints(n, "axes", axes);
        };
        v.push_back(c);
      }
    }
  }
  v.push_back({.label = "noop_with_empty_axes", .op = "ReduceSum", .opset = 13, .inputs = {rnd("x", {3, 4})},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "noop_with_empty_axes", 1); }});
  return v;
}

const bool registered = add_cases(gemm_cases()) && add_cases(softmax_cases()) && add_cases(norm_cases()) &&
                        add_cases(reduce_cases());

}  // namespace
}  // namespace kestrel::backend_ops

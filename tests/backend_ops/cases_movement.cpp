// Data movement and selection ops: aliases (Reshape, Flatten, Squeeze,
// Unsqueeze, Dropout), strided copies (Transpose, Concat, Split, Slice,
// Expand, Tile, DepthToSpace, SpaceToDepth), Gather, Where, Pad, Cast and
// Resize. Odd sizes, negative axes, size-1 dims, integer tensors, and every
// opset form of the attributes/host inputs.
#include "harness.h"

namespace kestrel::backend_ops {
namespace {

InputSpec typed(InputSpec s, DType t) {
  s.dtype = t;
  return s;
}
// Random integers in [lo, hi) as int64 (a graph input).
InputSpec rnd_i64(const std::string& name, Shape shape, float lo, float hi) {
  return typed(rnd(name, std::move(shape), lo, hi), DType::Int64);
}
InputSpec rnd_bool(const std::string& name, Shape shape) { return typed(rnd(name, std::move(shape)), DType::Bool); }

using Attrs = std::function<void(onnx::NodeProto&)>;
Attrs axis(int64_t a) { return [a](onnx::NodeProto& n) { attr_i(n, "axis", a); }; }
Attrs ints_attr(const char* name, std::vector<int64_t> v) {
  return [name, v](onnx::NodeProto& n) { attr_ints(n, name, v); };
}

std::vector<OpCase> alias_cases() {
  return {
      {.label = "Reshape 0 and -1", .op = "Reshape", .inputs = {rnd("x", {2, 3, 4}), ints("s", {4, 0, -1})}},
      {.label = "Reshape allowzero to [6,4]", .op = "Reshape", .opset = 14,
       .inputs = {rnd("x", {2, 3, 4}), ints("s", {6, 4})}, .attrs = [](onnx::NodeProto& n) { attr_i(n, "allowzero", 1); }},
      {.label = "Reshape int64 data", .op = "Reshape", .inputs = {rnd_i64("x", {3, 5}, -9, 9), ints("s", {-1})}},
      {.label = "Flatten axis 2", .op = "Flatten", .inputs = {rnd("x", {2, 3, 4, 5})}, .attrs = axis(2)},
      {.label = "Flatten axis -1", .op = "Flatten", .inputs = {rnd("x", {2, 3, 5})}, .attrs = axis(-1)},
      {.label = "Squeeze opset 11 axes attr", .op = "Squeeze", .opset = 11, .inputs = {rnd("x", {3, 1, 5, 1})},
       .attrs = ints_attr("axes", {1})},
      {.label = "Squeeze opset 13 axes input -1", .op = "Squeeze", .opset = 13,
       .inputs = {rnd("x", {3, 1, 5, 1}), ints("a", {-1})}},
      {.label = "Squeeze all size-1", .op = "Squeeze", .opset = 13, .inputs = {rnd("x", {1, 3, 1, 5, 1})}},
      {.label = "Unsqueeze opset 11 axes attr", .op = "Unsqueeze", .opset = 11, .inputs = {rnd("x", {3, 5})},
       .attrs = ints_attr("axes", {0, 3})},
      {.label = "Unsqueeze opset 13 axes input", .op = "Unsqueeze", .opset = 13,
       .inputs = {rnd("x", {3, 5}), ints("a", {-1, 1})}},
      {.label = "Dropout inference", .op = "Dropout", .opset = 13, .inputs = {rnd("x", {4, 7}), floats("r", {0.3f})}},
  };
}

std::vector<OpCase> copy_cases() {
  std::vector<OpCase> v = {
      {.label = "Transpose NCHW->NHWC [2,5,7,9]", .op = "Transpose", .inputs = {rnd("x", {2, 5, 7, 9})},
       .attrs = ints_attr("perm", {0, 2, 3, 1})},
      {.label = "Transpose NHWC->NCHW [2,7,9,5]", .op = "Transpose", .inputs = {rnd("x", {2, 7, 9, 5})},
       .attrs = ints_attr("perm", {0, 3, 1, 2})},
      {.label = "Transpose NCHW->NHWC 3 channels [1,3,24,40]", .op = "Transpose", .inputs = {rnd("x", {1, 3, 24, 40})},
       .attrs = ints_attr("perm", {0, 2, 3, 1})},
      // The CPU's oneDNN reorder takes these (backends/cpu/transpose.cpp: from
      // 65,536 elements; the 2 dispatches' case below too).
      {.label = "Transpose NCHW->NHWC 3 channels [1,3,160,200]", .op = "Transpose",
       .inputs = {rnd("x", {1, 3, 160, 200})}, .attrs = ints_attr("perm", {0, 2, 3, 1})},
      {.label = "Transpose rank 4 [3,1,0,2]", .op = "Transpose", .inputs = {rnd("x", {3, 4, 5, 6})},
       .attrs = ints_attr("perm", {3, 1, 0, 2})},
      {.label = "Transpose rank 6", .op = "Transpose", .inputs = {rnd("x", {2, 3, 1, 4, 5, 3})},
       .attrs = ints_attr("perm", {5, 0, 3, 1, 4, 2})},
      {.label = "Transpose last two [3,37,45] (tiled)", .op = "Transpose", .inputs = {rnd("x", {3, 37, 45})},
       .attrs = ints_attr("perm", {0, 2, 1})},
      // 5 planes of 1M elements: the tiled path splits them over two dispatches.
      {.label = "Transpose last two [5,1024,1000] (2 dispatches)", .op = "Transpose",
       .inputs = {rnd("x", {5, 1024, 1000})}, .attrs = ints_attr("perm", {0, 2, 1})},
      {.label = "Transpose default perm [4,65,33]", .op = "Transpose", .inputs = {rnd("x", {4, 65, 33})}},
      {.label = "Transpose int64 [3,7]", .op = "Transpose", .inputs = {rnd_i64("x", {3, 7}, -50, 50)}},
      {.label = "Concat 3 inputs axis 1", .op = "Concat",
       .inputs = {rnd("a", {2, 3, 5}), rnd("b", {2, 1, 5}), rnd("c", {2, 4, 5})}, .attrs = axis(1)},
      {.label = "Concat axis -1 with weight", .op = "Concat", .inputs = {rnd("a", {3, 7}), weight("b", {3, 2})},
       .attrs = axis(-1)},
      {.label = "Concat int64 axis 0", .op = "Concat",
       .inputs = {rnd_i64("a", {2}, -9, 9), ints("b", {7}), rnd_i64("c", {3}, 0, 99)}, .attrs = axis(0)},
      {.label = "Split attr opset 11 axis 1", .op = "Split", .opset = 11, .inputs = {rnd("x", {3, 10, 4})},
       .attrs = [](onnx::NodeProto& n) { attr_i(n, "axis", 1); attr_ints(n, "split", {2, 7, 1}); }, .outputs = 3},
      {.label = "Split input opset 13 axis -1", .op = "Split", .opset = 13,
       .inputs = {rnd("x", {3, 11}), ints("s", {5, 6})}, .attrs = axis(-1), .outputs = 2},
      {.label = "Split equal opset 13", .op = "Split", .opset = 13, .inputs = {rnd("x", {6, 5})}, .outputs = 3},
      {.label = "Split num_outputs 18 uneven", .op = "Split", .opset = 18, .inputs = {rnd("x", {2, 7, 3})},
       .attrs = [](onnx::NodeProto& n) { attr_i(n, "axis", 1); attr_i(n, "num_outputs", 3); }, .outputs = 3},
      {.label = "Slice opset 9 attrs", .op = "Slice", .opset = 9, .inputs = {rnd("x", {5, 8})},
       .attrs = [](onnx::NodeProto& n) { attr_ints(n, "starts", {1, -6}); attr_ints(n, "ends", {4, 100}); }},
      {.label = "Slice negative step", .op = "Slice", .opset = 13,
       .inputs = {rnd("x", {4, 9, 6}), ints("s", {-1, 5}), ints("e", {-100, 0}), ints("a", {1, 2}), ints("st", {-2, -1})}},
      {.label = "Slice step 3 clamped, axis -1", .op = "Slice", .opset = 13,
       .inputs = {rnd("x", {3, 1, 17}), ints("s", {1}), ints("e", {1000}), ints("a", {-1}), ints("st", {3})}},
      {.label = "Slice int64 (shape slicing)", .op = "Slice", .opset = 13,
       .inputs = {rnd_i64("x", {4}, 1, 50), ints("s", {-2}), ints("e", {1000})}},
      {.label = "Expand [3,1] to [2,3,4]", .op = "Expand", .inputs = {rnd("x", {3, 1}), ints("s", {2, 1, 4})}},
      {.label = "Expand to smaller spec [1,5]", .op = "Expand", .inputs = {rnd("x", {4, 1, 5}), ints("s", {3, 1})}},
      {.label = "Tile [2,3,1] x [2,1,3]", .op = "Tile", .inputs = {rnd("x", {2, 3, 1}), ints("r", {2, 1, 3})}},
      {.label = "Tile int64 [3] x [4]", .op = "Tile", .inputs = {rnd_i64("x", {3}, -5, 5), ints("r", {4})}},
      {.label = "DepthToSpace DCR b2", .op = "DepthToSpace", .inputs = {rnd("x", {2, 8, 3, 5})},
       .attrs = [](onnx::NodeProto& n) { attr_i(n, "blocksize", 2); }},
      {.label = "DepthToSpace CRD b3", .op = "DepthToSpace", .inputs = {rnd("x", {1, 18, 2, 3})},
       .attrs = [](onnx::NodeProto& n) { attr_i(n, "blocksize", 3); attr_s(n, "mode", "CRD"); }},
      {.label = "SpaceToDepth b2", .op = "SpaceToDepth", .inputs = {rnd("x", {2, 3, 6, 4})},
       .attrs = [](onnx::NodeProto& n) { attr_i(n, "blocksize", 2); }},
  };
  return v;
}

std::vector<OpCase> select_cases() {
  return {
      {.label = "Gather axis 0 negative indices", .op = "Gather",
       .inputs = {rnd("x", {7, 5}), rnd_i64("i", {4}, -7, 7)}},
      {.label = "Gather axis 1 2-D negative indices", .op = "Gather",
       .inputs = {rnd("x", {3, 9, 4}), rnd_i64("i", {2, 3}, -9, 9)}, .attrs = axis(1)},
      {.label = "Gather axis -1 weight indices", .op = "Gather",
       .inputs = {rnd("x", {2, 3, 11}), ints("i", {10, -1, 0})}, .attrs = axis(-1)},
      {.label = "Gather scalar index from int64 shape", .op = "Gather",
       .inputs = {rnd_i64("x", {4}, 1, 99), ints("i", {-2}, false)}},
      {.label = "Where broadcast 3 inputs", .op = "Where",
       .inputs = {rnd_bool("c", {3, 1, 5}), rnd("x", {4, 1}), rnd("y", {5})}},
      {.label = "Where same shape", .op = "Where", .inputs = {rnd_bool("c", {6, 7}), rnd("x", {6, 7}), rnd("y", {6, 7})}},
      {.label = "Where int64", .op = "Where",
       .inputs = {rnd_bool("c", {2, 5}), rnd_i64("x", {2, 5}, -9, 9), rnd_i64("y", {1}, -9, 9)}},
      {.label = "Pad constant opset 11 value", .op = "Pad", .opset = 11,
       .inputs = {rnd("x", {2, 3, 5}), ints("p", {0, 1, 2, 1, 0, 3}), floats("v", {1.5f})}},
      {.label = "Pad reflect 4-D", .op = "Pad", .opset = 13,
       .inputs = {rnd("x", {1, 3, 5, 6}), ints("p", {0, 0, 2, 3, 0, 0, 4, 1})},
       .attrs = [](onnx::NodeProto& n) { attr_s(n, "mode", "reflect"); }},
      {.label = "Pad edge 4-D", .op = "Pad", .opset = 13,
       .inputs = {rnd("x", {2, 2, 3, 4}), ints("p", {0, 1, 1, 2, 0, 0, 3, 1})},
       .attrs = [](onnx::NodeProto& n) { attr_s(n, "mode", "edge"); }},
      {.label = "Pad opset 7 attrs", .op = "Pad", .opset = 7, .inputs = {rnd("x", {3, 4})},
       .attrs = [](onnx::NodeProto& n) { attr_ints(n, "pads", {1, 0, 2, 3}); attr_f(n, "value", -2); }},
      {.label = "Pad negative (crop)", .op = "Pad", .opset = 13, .inputs = {rnd("x", {4, 6}), ints("p", {-1, 2, 0, -3})}},
      {.label = "Pad opset 18 axes", .op = "Pad", .opset = 18,
       .inputs = {rnd("x", {2, 3, 5}), ints("p", {1, 2}), absent(), ints("a", {-1})}},
      {.label = "Pad wrap opset 19", .op = "Pad", .opset = 19, .inputs = {rnd("x", {3, 4}), ints("p", {2, 5, 1, 6})},
       .attrs = [](onnx::NodeProto& n) { attr_s(n, "mode", "wrap"); }},
  };
}

OpCase cast(const std::string& label, InputSpec x, DType to) {
  return {.label = label, .op = "Cast", .opset = 13, .inputs = {std::move(x)},
          .attrs = [to](onnx::NodeProto& n) { attr_i(n, "to", int64_t(to)); }};
}

std::vector<OpCase> cast_cases() {
  OpCase int_to_float = cast("int64 -> float", rnd_i64("x", {3, 5}, -99, 99), DType::Float32);
  int_to_float.fp16_unsupported = "integers (e.g. ConvInteger sums) can pass float16's range";
  return {
      cast("float -> int64", rnd("x", {5, 7}, -20, 20), DType::Int64),
      cast("float -> int32", rnd("x", {33}, -5, 5), DType::Int32),
      cast("float -> float16", rnd("x", {4, 9}, -3, 3), DType::Float16),
      cast("float16 -> float", typed(rnd("x", {4, 9}, -3, 3), DType::Float16), DType::Float32),
      int_to_float,
      cast("int64 -> int32", rnd_i64("x", {3, 5}, -99, 99), DType::Int32),
      cast("bool -> float", rnd_bool("x", {11}), DType::Float32),
      cast("bool -> int64", rnd_bool("x", {11}), DType::Int64),
      cast("float -> bool", rnd("x", {13}, -1, 1), DType::Bool),
      cast("int64 -> bool", rnd_i64("x", {13}, -2, 2), DType::Bool),
  };
}

Attrs resize_attrs(std::string mode, std::string ctm, std::string nearest = "") {
  return [=](onnx::NodeProto& n) {
    attr_s(n, "mode", mode);
    attr_s(n, "coordinate_transformation_mode", ctm);
    if (!nearest.empty()) attr_s(n, "nearest_mode", nearest);
  };
}

std::vector<OpCase> resize_cases() {
  return {
      {.label = "nearest 2x asymmetric floor", .op = "Resize", .opset = 13,
       .inputs = {rnd("x", {1, 3, 5, 7}), absent(), floats("s", {1, 1, 2, 2})},
       .attrs = resize_attrs("nearest", "asymmetric", "floor")},
      {.label = "nearest opset 10 scales", .op = "Resize", .opset = 10,
       .inputs = {rnd("x", {2, 2, 4, 3}), floats("s", {1, 1, 2, 3})}},
      {.label = "nearest 1.7x half_pixel round_prefer_ceil", .op = "Resize", .opset = 13,
       .inputs = {rnd("x", {1, 2, 6, 5}), absent(), floats("s", {1, 1, 1.7f, 1.3f})},
       .attrs = resize_attrs("nearest", "half_pixel", "round_prefer_ceil")},
      {.label = "nearest sizes tf_half_pixel_for_nn ceil", .op = "Resize", .opset = 13,
       .inputs = {rnd("x", {1, 2, 5, 5}), absent(), absent(), ints("z", {1, 2, 8, 3})},
       .attrs = resize_attrs("nearest", "tf_half_pixel_for_nn", "ceil")},
      {.label = "nearest int64 asymmetric", .op = "Resize", .opset = 13,
       .inputs = {rnd_i64("x", {1, 1, 3, 4}, -9, 9), absent(), floats("s", {1, 1, 2, 2})},
       .attrs = resize_attrs("nearest", "asymmetric", "floor")},
      {.label = "bilinear half_pixel 1.7x2.3", .op = "Resize", .opset = 13,
       .inputs = {rnd("x", {2, 3, 7, 5}), absent(), floats("s", {1, 1, 1.7f, 2.3f})},
       .attrs = resize_attrs("linear", "half_pixel")},
      {.label = "bilinear align_corners sizes", .op = "Resize", .opset = 13,
       .inputs = {rnd("x", {1, 3, 6, 9}), absent(), absent(), ints("z", {1, 3, 11, 7})},
       .attrs = resize_attrs("linear", "align_corners")},
      {.label = "bilinear pytorch_half_pixel down", .op = "Resize", .opset = 13,
       .inputs = {rnd("x", {1, 2, 9, 13}), absent(), floats("s", {1, 1, 0.6f, 0.45f})},
       .attrs = resize_attrs("linear", "pytorch_half_pixel")},
      {.label = "bilinear asymmetric 2x opset 11 roi", .op = "Resize", .opset = 11,
       .inputs = {rnd("x", {1, 4, 3, 5}), floats("roi", {}), floats("s", {1, 1, 2, 2})},
       .attrs = resize_attrs("linear", "asymmetric")},
      {.label = "linear 1-D last axis [2,3,9]->[2,3,14]", .op = "Resize", .opset = 13,
       .inputs = {rnd("x", {2, 3, 9}), absent(), absent(), ints("z", {2, 3, 14})},
       .attrs = resize_attrs("linear", "half_pixel")},
  };
}

const bool registered = add_cases(alias_cases()) && add_cases(copy_cases()) && add_cases(select_cases()) &&
                        add_cases(cast_cases()) && add_cases(resize_cases());

}  // namespace
}  // namespace kestrel::backend_ops

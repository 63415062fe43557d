// Convolution and pooling: odd channel counts and sizes (not multiples of the
// 16/64 tiles), groups, depthwise, strides, dilations, asymmetric and auto
// pads, 1-D, fused activations, ConvTranspose and the pools' ceil_mode/pads.
#include "harness.h"
#include "ops/activation.h"

namespace kestrel::backend_ops {
namespace {

using Attrs = std::function<void(onnx::NodeProto&)>;

OpCase conv(const std::string& label, Shape x, Shape w, bool bias, Attrs attrs = nullptr) {
  std::vector<InputSpec> in{rnd("x", x), weight("w", w)};
  if (bias) in.push_back(weight("b", {w[0]}));
  return {.label = label, .op = "Conv", .opset = 11, .inputs = in, .attrs = std::move(attrs)};
}

std::vector<OpCase> conv_cases() {
  std::vector<OpCase> v;
  v.push_back(conv("3x3 pad 1 odd [1,3,17,19]->5", {1, 3, 17, 19}, {5, 3, 3, 3}, true,
                   [](onnx::NodeProto& n) { attr_ints(n, "pads", {1, 1, 1, 1}); }));
  v.push_back(conv("3x3 no bias, tiles x2 [2,20,13,11]->70", {2, 20, 13, 11}, {70, 20, 3, 3}, false));
  v.push_back(conv("1x1 [1,37,9,10]->41", {1, 37, 9, 10}, {41, 37, 1, 1}, true));
  v.push_back(conv("1x1 big tile [1,64,24,24]->96", {1, 64, 24, 24}, {96, 64, 1, 1}, true));
  v.push_back(conv("groups=2 [1,6,11,9]->10", {1, 6, 11, 9}, {10, 3, 3, 3}, true,
                   [](onnx::NodeProto& n) { attr_i(n, "group", 2); attr_ints(n, "pads", {1, 1, 1, 1}); }));
  v.push_back(conv("stride 2 [1,5,23,21]->7", {1, 5, 23, 21}, {7, 5, 3, 3}, true,
                   [](onnx::NodeProto& n) { attr_ints(n, "strides", {2, 2}); attr_ints(n, "pads", {1, 1, 1, 1}); }));
  v.push_back(conv("dilation 2 [1,4,15,16]->6", {1, 4, 15, 16}, {6, 4, 3, 3}, false,
                   [](onnx::NodeProto& n) { attr_ints(n, "dilations", {2, 2}); attr_ints(n, "pads", {2, 2, 2, 2}); }));
  v.push_back(conv("asymmetric pads 5x3 kernel", {1, 3, 14, 13}, {4, 3, 5, 3}, true,
                   [](onnx::NodeProto& n) { attr_ints(n, "pads", {0, 2, 3, 1}); }));
  v.push_back(conv("auto_pad SAME_UPPER stride 2", {1, 3, 16, 15}, {8, 3, 4, 4}, true, [](onnx::NodeProto& n) {
    attr_s(n, "auto_pad", "SAME_UPPER");
    attr_ints(n, "strides", {2, 2});
  }));
  v.push_back(conv("auto_pad SAME_LOWER", {1, 2, 9, 8}, {3, 2, 2, 2}, false,
                   [](onnx::NodeProto& n) { attr_s(n, "auto_pad", "SAME_LOWER"); }));
  v.push_back(conv("auto_pad VALID", {1, 3, 10, 12}, {4, 3, 3, 3}, true,
                   [](onnx::NodeProto& n) { attr_s(n, "auto_pad", "VALID"); }));
  v.push_back(conv("1-D stride 2 pad 1", {2, 6, 31}, {9, 6, 5}, true,
                   [](onnx::NodeProto& n) { attr_ints(n, "strides", {2}); attr_ints(n, "pads", {1, 2}); }));
  v.push_back(conv("depthwise 3x3 [1,13,17,15]", {1, 13, 17, 15}, {13, 1, 3, 3}, true,
                   [](onnx::NodeProto& n) { attr_i(n, "group", 13); attr_ints(n, "pads", {1, 1, 1, 1}); }));
  v.push_back(conv("depthwise 5x5 stride 2 no bias", {2, 8, 20, 19}, {8, 1, 5, 5}, false, [](onnx::NodeProto& n) {
    attr_i(n, "group", 8);
    attr_ints(n, "strides", {2, 2});
    attr_ints(n, "pads", {2, 2, 2, 2});
  }));
  v.push_back(conv("depthwise multiplier 2 dilation 2", {1, 4, 12, 12}, {8, 1, 3, 3}, true, [](onnx::NodeProto& n) {
    attr_i(n, "group", 4);
    attr_ints(n, "dilations", {2, 2});
    attr_ints(n, "pads", {2, 1, 2, 1});
  }));
  v.push_back(conv("fused Relu", {1, 8, 12, 12}, {16, 8, 3, 3}, true, [](onnx::NodeProto& n) {
    attr_ints(n, "pads", {1, 1, 1, 1});
    attr_i(n, "kestrel.activation", int64_t(ops::Activation::Relu));
  }));
  v.push_back(conv("fused Clip 0..6 depthwise", {1, 9, 10, 10}, {9, 1, 3, 3}, true, [](onnx::NodeProto& n) {
    attr_i(n, "group", 9);
    attr_i(n, "kestrel.activation", int64_t(ops::Activation::Clip));
    attr_floats(n, "kestrel.activation_params", {0.f, 0.5f});
  }));
  v.push_back(conv("fused HardSigmoid 1x1", {1, 12, 7, 7}, {20, 12, 1, 1}, true, [](onnx::NodeProto& n) {
    attr_i(n, "kestrel.activation", int64_t(ops::Activation::HardSigmoid));
    attr_floats(n, "kestrel.activation_params", {0.2f, 0.5f});
  }));
  v.push_back(conv("fused x * Clip(x + 3, 0, 6) / 6, 3x3", {1, 6, 9, 9}, {10, 6, 3, 3}, true, [](onnx::NodeProto& n) {
    attr_ints(n, "pads", {1, 1, 1, 1});
    attr_i(n, "kestrel.activation", int64_t(ops::Activation::Relu6HardSwish));
  }));
  // Maps the CPU's direct convolution takes (backends/cpu/direct_conv.h):
  // a row of 46 outputs on 48 computed, and a stride-2 layer's phases.
  v.push_back(conv("direct 3x3 fused Silu [1,8,30,46]->12", {1, 8, 30, 46}, {12, 8, 3, 3}, true, [](onnx::NodeProto& n) {
    attr_ints(n, "pads", {1, 1, 1, 1});
    attr_i(n, "kestrel.activation", int64_t(ops::Activation::Silu));
  }));
  v.push_back(conv("direct 3x3 stride 2 [1,6,64,95]->10", {1, 6, 64, 95}, {10, 6, 3, 3}, false,
                   [](onnx::NodeProto& n) { attr_ints(n, "strides", {2, 2}); attr_ints(n, "pads", {1, 1, 1, 1}); }));
  v.push_back(conv("single channel in, 1 out", {1, 1, 19, 23}, {1, 1, 3, 3}, true));
  // K = 16 * 9, a multiple of 8 in each group: the tensor-core kernel's 16-byte weight loads.
  v.push_back(conv("groups=2 K%8=0 [2,32,20,20]->48", {2, 32, 20, 20}, {48, 16, 3, 3}, true,
                   [](onnx::NodeProto& n) { attr_i(n, "group", 2); attr_ints(n, "pads", {1, 1, 1, 1}); }));
  // 2.4e9 multiply-adds: past one dispatch's budget, so the pixel tiles split over two dispatches.
  v.push_back(conv("split dispatches [1,128,128,128]->128", {1, 128, 128, 128}, {128, 128, 3, 3}, true,
                   [](onnx::NodeProto& n) { attr_ints(n, "pads", {1, 1, 1, 1}); }));
  for (auto& c : v) c.fp32_nmse = 1e-8;  // sums of up to ~600 products in a different order
  return v;
}

std::vector<OpCase> conv_transpose_cases() {
  // group 1: W is [C, M, kh, kw] and the bias has M values.
  auto ct = [](const std::string& label, Shape x, Shape w, bool bias, Attrs attrs) {
    std::vector<InputSpec> in{rnd("x", x), weight("w", w)};
    if (bias) in.push_back(weight("b", {w[1]}));
    return OpCase{.label = label, .op = "ConvTranspose", .opset = 11, .inputs = in, .attrs = std::move(attrs)};
  };
  std::vector<OpCase> v;
  v.push_back(ct("stride 2 output_padding 1", {1, 5, 7, 9}, {5, 6, 3, 3}, true, [](onnx::NodeProto& n) {
    attr_ints(n, "strides", {2, 2});
    attr_ints(n, "pads", {1, 1, 1, 1});
    attr_ints(n, "output_padding", {1, 1});
  }));
  v.push_back(ct("4x4 stride 2 no bias", {2, 3, 6, 5}, {3, 4, 4, 4}, false, [](onnx::NodeProto& n) {
    attr_ints(n, "strides", {2, 2});
    attr_ints(n, "pads", {1, 1, 1, 1});
  }));
  // group 2: the bias has group * Mg = 6 values.
  v.push_back(OpCase{.label = "groups=2 dilation 2 asymmetric pads", .op = "ConvTranspose", .opset = 11,
                     .inputs = {rnd("x", {1, 4, 5, 6}), weight("w", {4, 3, 3, 3}), weight("b", {6})},
                     .attrs = [](onnx::NodeProto& n) {
                       attr_i(n, "group", 2);
                       attr_ints(n, "dilations", {2, 2});
                       attr_ints(n, "pads", {0, 1, 2, 1});
                     }});
  v.push_back(ct("output_shape stride 3", {1, 2, 4, 5}, {2, 3, 3, 3}, true, [](onnx::NodeProto& n) {
    attr_ints(n, "strides", {3, 3});
    attr_ints(n, "output_shape", {13, 15});
  }));
  v.push_back(ct("1-D stride 2", {1, 3, 11}, {3, 2, 4}, true, [](onnx::NodeProto& n) { attr_ints(n, "strides", {2}); }));
  for (auto& c : v) c.fp32_nmse = 1e-8;
  return v;
}

OpCase pool(const std::string& label, const std::string& op, Shape x, Attrs attrs) {
  return {.label = label, .op = op, .opset = op == "AveragePool" ? 19 : 12, .inputs = {rnd("x", x, -3, 3)},
          .attrs = std::move(attrs)};
}

std::vector<OpCase> pool_cases() {
  std::vector<OpCase> v;
  v.push_back(pool("2x2 stride 2 odd size", "MaxPool", {1, 5, 13, 11}, [](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {2, 2});
    attr_ints(n, "strides", {2, 2});
  }));
  v.push_back(pool("3x3 stride 2 pad 1 ceil_mode", "MaxPool", {2, 3, 14, 15}, [](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {3, 3});
    attr_ints(n, "strides", {2, 2});
    attr_ints(n, "pads", {1, 1, 1, 1});
    attr_i(n, "ceil_mode", 1);
  }));
  v.push_back(pool("dilation 2 asymmetric pads", "MaxPool", {1, 4, 12, 13}, [](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {3, 2});
    attr_ints(n, "dilations", {2, 2});
    attr_ints(n, "pads", {0, 1, 2, 0});
  }));
  v.push_back(pool("auto_pad SAME_UPPER", "MaxPool", {1, 3, 9, 10}, [](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {3, 3});
    attr_ints(n, "strides", {2, 2});
    attr_s(n, "auto_pad", "SAME_UPPER");
  }));
  // YOLOX's SPP: large stride-1 windows, padded to keep the size (the CPU's
  // separable kernel: its row and column passes clipped at every border).
  for (int64_t k : {5, 13})
    v.push_back(pool(std::to_string(k) + "x" + std::to_string(k) + " stride 1 pad " + std::to_string(k / 2), "MaxPool",
                     {1, 6, 13, 19}, [k](onnx::NodeProto& n) {
                       attr_ints(n, "kernel_shape", {k, k});
                       attr_ints(n, "pads", {k / 2, k / 2, k / 2, k / 2});
                     }));
  v.push_back(pool("1-D", "MaxPool", {2, 3, 17}, [](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {4});
    attr_ints(n, "strides", {3});
  }));
  v.push_back(pool("3x3 pad 1 exclude pad", "AveragePool", {1, 6, 11, 12}, [](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {3, 3});
    attr_ints(n, "pads", {1, 1, 1, 1});
  }));
  v.push_back(pool("count_include_pad ceil_mode stride 2", "AveragePool", {1, 4, 13, 10}, [](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {3, 3});
    attr_ints(n, "strides", {2, 2});
    attr_ints(n, "pads", {1, 0, 1, 0});
    attr_i(n, "ceil_mode", 1);
    attr_i(n, "count_include_pad", 1);
  }));
  v.push_back(pool("ceil_mode exclude pad 2x2", "AveragePool", {2, 3, 9, 7}, [](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {2, 2});
    attr_ints(n, "strides", {2, 2});
    attr_i(n, "ceil_mode", 1);
  }));
  v.push_back(pool("dilation 2 (opset 19)", "AveragePool", {1, 2, 12, 12}, [](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {2, 3});
    attr_ints(n, "dilations", {2, 2});
  }));
  v.push_back({.label = "odd plane [2,7,13,11]", .op = "GlobalAveragePool", .inputs = {rnd("x", {2, 7, 13, 11})}});
  v.push_back({.label = "large plane [1,3,300,301]", .op = "GlobalAveragePool", .inputs = {rnd("x", {1, 3, 300, 301})}});
  v.push_back({.label = "odd plane [2,7,13,11]", .op = "GlobalMaxPool", .inputs = {rnd("x", {2, 7, 13, 11})}});
  v.push_back({.label = "1-D [3,5,7]", .op = "GlobalMaxPool", .inputs = {rnd("x", {3, 5, 7})}});
  for (auto& c : v)
    if (c.op == "GlobalAveragePool") c.fp32_nmse = 1e-8;  // float partial sums vs the CPU's double sum
  return v;
}

const bool registered = add_cases(conv_cases()) && add_cases(conv_transpose_cases()) && add_cases(pool_cases());

}  // namespace
}  // namespace kestrel::backend_ops

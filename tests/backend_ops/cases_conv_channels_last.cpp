// ConvChannelsLast (com.kestrel): the CPU backend's oneDNN kernel for the
// convolution chains its layout pass keeps channels-last, against the op's
// reference (ONNX Conv on the transposed tensors). Shapes beside oneDNN's
// vector widths (3, 13, 24 channels), each kernel family it picks
// (depthwise, 1x1, direct) and Kestrel's own for dense windows on AVX2, strides, dilations, asymmetric pads, groups, a
// batch of two, the residual and every activation route: Relu, LeakyRelu
// and Clip in oneDNN's post-op, the rest after it; and the planar output of
// a few-channel 1x1 layer. Tolerance: the defaults (float32 sums in
// another order than the reference's).
#include "harness.h"
#include "ops/activation.h"

namespace kestrel::backend_ops {
namespace {

using Attrs = std::function<void(onnx::NodeProto&)>;
constexpr const char* kCpuOnly = "ConvChannelsLast exists only in the CPU backend's rewritten graphs";

// x and r are channels-last ([N, H, W, C]); w as ONNX Conv's.
OpCase conv_cl(const std::string& label, Shape x, Shape w, bool bias, Attrs attrs = nullptr, Shape residual = {}) {
  std::vector<InputSpec> in{rnd("x", x), weight("w", w)};
  if (bias) in.push_back(weight("b", {w[0]}));
  if (!residual.empty()) {
    if (!bias) in.push_back(InputSpec{});  // (an omitted bias)
    in.push_back(rnd("r", residual));
  }
  return {.label = label, .op = "ConvChannelsLast", .opset = 1, .inputs = in, .attrs = std::move(attrs),
          .no_vulkan_kernel = kCpuOnly, .domain = "com.kestrel"};
}

Attrs activation(ops::Activation a, std::vector<float> params, std::vector<int64_t> pads = {1, 1, 1, 1}, int64_t group = 1) {
  return [=](onnx::NodeProto& n) {
    attr_ints(n, "pads", pads);
    if (group > 1) attr_i(n, "group", group);
    attr_i(n, "kestrel.activation", int64_t(a));
    if (!params.empty()) attr_floats(n, "kestrel.activation_params", params);
  };
}

std::vector<OpCase> conv_channels_last_cases() {
  using A = ops::Activation;
  std::vector<OpCase> v;
  v.push_back(conv_cl("stem 3 -> 13, 3x3 stride 2", {1, 17, 19, 3}, {13, 3, 3, 3}, true, [](onnx::NodeProto& n) {
    attr_ints(n, "strides", {2, 2});
    attr_ints(n, "pads", {1, 1, 1, 1});
  }));
  v.push_back(conv_cl("depthwise 24, Relu", {1, 12, 10, 24}, {24, 1, 3, 3}, true, activation(A::Relu, {}, {1, 1, 1, 1}, 24)));
  v.push_back(conv_cl("depthwise 32 stride 2, no bias", {2, 11, 14, 32}, {32, 1, 3, 3}, false, [](onnx::NodeProto& n) {
    attr_i(n, "group", 32);
    attr_ints(n, "strides", {2, 2});
    attr_ints(n, "pads", {1, 1, 1, 1});
  }));
  v.push_back(conv_cl("1x1 24 -> 40, residual, Relu", {1, 9, 7, 24}, {40, 24, 1, 1}, true,
                      activation(A::Relu, {}, {0, 0, 0, 0}), {1, 9, 7, 40}));
  v.push_back(conv_cl("1x1 no bias, residual", {1, 5, 6, 16}, {16, 16, 1, 1}, false, nullptr, {1, 5, 6, 16}));
  v.push_back(conv_cl("3x3 16 -> 20, LeakyRelu", {1, 8, 9, 16}, {20, 16, 3, 3}, true, activation(A::LeakyRelu, {0.1f})));
  v.push_back(conv_cl("3x3 Clip 0..6", {1, 8, 8, 13}, {16, 13, 3, 3}, true, activation(A::Clip, {0.f, 6.f})));
  v.push_back(conv_cl("3x3 SiLU, residual", {1, 7, 9, 16}, {16, 16, 3, 3}, true, activation(A::Silu, {}),
                      {1, 7, 9, 16}));
  v.push_back(conv_cl("3x3 HardSwish", {1, 6, 6, 8}, {12, 8, 3, 3}, true, activation(A::HardSwish, {})));
  v.push_back(conv_cl("groups 2, dilation 2, asymmetric pads", {1, 12, 11, 8}, {10, 4, 3, 3}, true,
                      [](onnx::NodeProto& n) {
                        attr_i(n, "group", 2);
                        attr_ints(n, "dilations", {2, 2});
                        attr_ints(n, "pads", {2, 1, 2, 3});
                      }));
  v.push_back(conv_cl("auto_pad SAME_UPPER stride 2", {1, 15, 16, 5}, {8, 5, 4, 4}, true, [](onnx::NodeProto& n) {
    attr_s(n, "auto_pad", "SAME_UPPER");
    attr_ints(n, "strides", {2, 2});
  }));
  // Dense windows of 8 channels or more: on AVX2 without AVX-512, Kestrel's
  // own channels-last kernel (backends/cpu/nhwc_conv.h) instead of oneDNN's.
  v.push_back(conv_cl("dense 3x3 32 -> 40, dilation 2, asymmetric pads, residual, Relu", {1, 10, 13, 32},
                      {40, 32, 3, 3}, true, [](onnx::NodeProto& n) {
                        attr_ints(n, "dilations", {2, 2});
                        attr_ints(n, "pads", {2, 1, 2, 3});
                        attr_i(n, "kestrel.activation", int64_t(ops::Activation::Relu));
                      }, {1, 10, 13, 40}));
  v.push_back(conv_cl("dense 5x5 stride 2 16 -> 16, batch 2, no bias", {2, 11, 14, 16}, {16, 16, 5, 5}, false,
                      [](onnx::NodeProto& n) {
                        attr_ints(n, "strides", {2, 2});
                        attr_ints(n, "pads", {2, 2, 2, 2});
                      }));
  // A chain's last layer, written planar [N, M, H, W] (ops/conv_channels_last.h).
  v.push_back(conv_cl("1x1 64 -> 6, planar output, batch 2", {2, 5, 7, 64}, {6, 64, 1, 1}, true, [](onnx::NodeProto& n) {
    attr_i(n, "kestrel.planar_output", 1);
  }));
  v.push_back(conv_cl("1x1 planar output, Sigmoid", {1, 4, 6, 20}, {9, 20, 1, 1}, true, [](onnx::NodeProto& n) {
    attr_i(n, "kestrel.planar_output", 1);
    attr_i(n, "kestrel.activation", int64_t(ops::Activation::Sigmoid));
  }));
  return v;
}

const bool registered = add_cases(conv_channels_last_cases());

}  // namespace
}  // namespace kestrel::backend_ops

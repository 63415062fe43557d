// MaxPoolChannelsLast (com.kestrel): the CPU backend's kernel for the max
// pools its layout pass keeps channels-last (backends/cpu/pool.cpp),
// against the op's reference (MaxPool's rule tap by tap over [N, H, W, C]).
// Channel counts beside the vector widths (3, 13, 24), the direct form
// (2x2 stride 2, 3x3 with padding and ceil_mode, auto_pad) and the
// separable one (YOLOX's SPP windows, 5x5 to 13x13 padded to keep the
// size, a batch of two), and the forms the kernel leaves to the reference
// (dilation, a window of padding alone). Exact: a maximum has one answer.
#include "harness.h"

namespace kestrel::backend_ops {
namespace {

using Attrs = std::function<void(onnx::NodeProto&)>;

OpCase pool_cl(const std::string& label, Shape x, Attrs attrs) {
  return {.label = label, .op = "MaxPoolChannelsLast", .opset = 1, .inputs = {rnd("x", x, -3, 3)},
          .attrs = std::move(attrs), .fp32_nmse = 0, .fp32_abs = 0,
          .no_vulkan_kernel = "MaxPoolChannelsLast exists only in the CPU backend's rewritten graphs",
          .domain = "com.kestrel"};
}

Attrs window(int64_t k, int64_t stride, std::vector<int64_t> pads) {
  return [=](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {k, k});
    attr_ints(n, "strides", {stride, stride});
    attr_ints(n, "pads", pads);
  };
}

std::vector<OpCase> max_pool_channels_last_cases() {
  std::vector<OpCase> v;
  v.push_back(pool_cl("2x2 stride 2 odd size, 13 channels", {1, 13, 11, 13}, window(2, 2, {0, 0, 0, 0})));
  v.push_back(pool_cl("3x3 stride 2 pad 1 ceil_mode, 24 channels", {2, 14, 15, 24}, [](onnx::NodeProto& n) {
    window(3, 2, {1, 1, 1, 1})(n);
    attr_i(n, "ceil_mode", 1);
  }));
  v.push_back(pool_cl("auto_pad SAME_UPPER, 3 channels", {1, 9, 10, 3}, [](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {3, 3});
    attr_ints(n, "strides", {2, 2});
    attr_s(n, "auto_pad", "SAME_UPPER");
  }));
  for (int64_t k : {5, 9, 13})
    v.push_back(pool_cl(std::to_string(k) + "x" + std::to_string(k) + " stride 1 pad " + std::to_string(k / 2) +
                            ", batch 2",
                        {2, 13, 19, 24}, window(k, 1, {k / 2, k / 2, k / 2, k / 2})));
  v.push_back(pool_cl("4x3 stride 3 asymmetric pads", {1, 17, 16, 13}, [](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {4, 3});
    attr_ints(n, "strides", {3, 3});
    attr_ints(n, "pads", {0, 2, 1, 0});
  }));
  // Left to the reference by the fast kernel.
  v.push_back(pool_cl("dilation 2 (reference)", {1, 12, 13, 8}, [](onnx::NodeProto& n) {
    attr_ints(n, "kernel_shape", {3, 2});
    attr_ints(n, "dilations", {2, 2});
  }));
  v.push_back(pool_cl("ceil_mode window of padding alone (reference)", {1, 5, 5, 8}, [](onnx::NodeProto& n) {
    window(2, 3, {1, 1, 1, 1})(n);
    attr_i(n, "ceil_mode", 1);
  }));
  return v;
}

const bool registered = add_cases(max_pool_channels_last_cases());

}  // namespace
}  // namespace kestrel::backend_ops

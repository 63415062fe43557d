// Resize's parameters, output shape and per-axis sampling maps, shared by the
// CPU kernel (src/ops/resize.cpp) and the Vulkan one, so both read the
// attributes, size the output and pick source indices and weights alike.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/registry.h"

namespace kestrel::ops {

enum class ResizeMode { Nearest, Linear, Cubic };

struct ResizeParams {
  ResizeMode mode = ResizeMode::Nearest;
  std::string ctm = "half_pixel";  // coordinate_transformation_mode
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  float extrapolation = 0;
  bool antialias = false;
};

// "nearest", "linear"/"bilinear" or "cubic"; fails on anything else.
ResizeMode parse_resize_mode(const KernelContext& ctx, const std::string& m);

// The attributes of a Resize node (Resize-10 has no coordinate modes and
// behaves like Upsample); fails on unknown modes.
ResizeParams resize_params(const KernelContext& ctx);

// The output shape, per-axis scales (used by the coordinate formulas) and the
// axes that scales/sizes talk about (opset 18 `axes`; all by default), from
// the scales or sizes input values (exactly one of them non-empty).
struct ResizeTarget {
  Shape out;
  std::vector<double> scales;
  std::vector<int> axes;
};
ResizeTarget resize_target(const KernelContext& ctx, const Shape& in, const std::vector<float>& scales_in,
                           const std::vector<int64_t>& sizes_in);

// Output shape from per-axis scales: floor(in * scale).
Shape shape_from_scales(const KernelContext& ctx, const Shape& in, const std::vector<double>& scales);

// The 1-D map of one axis: output index o reads idx[o*taps + k] with weight w[o*taps + k].
struct ResizeAxisMap {
  int64_t in = 0, out = 0;
  int taps = 1;
  std::vector<int64_t> idx;
  std::vector<float> w;
  std::vector<char> extrap;  // 1: the coordinate falls outside the crop (tf_crop_and_resize)
  bool any_extrap = false;
  // True when every output copies input o exactly: one tap of weight 1 on o
  // (linear/cubic maps at scale 1 have their other taps at weight 0).
  bool identity() const;
};

// The map of an axis of size `in` resized to `out` at `scale`; [start, end]
// is the crop box along it (tf_crop_and_resize only).
ResizeAxisMap resize_axis_map(const ResizeParams& p, int64_t in, int64_t out, double scale, double start = 0,
                              double end = 1);

}  // namespace kestrel::ops

// Window geometry for the Vulkan convolution and pooling kernels. Conv and the
// pools resolve strides/dilations/pads/auto_pad with the CPU kernels' own
// ops::window_geom, so both backends agree on output sizes and pads; its
// context argument is only used for the node and for errors.
#pragma once
#include "backends/vulkan/ops/geom_context.h"
#include "backends/vulkan/ops/util.h"
#include "ops/conv_util.h"

namespace kestrel::vulkan {

inline ops::WindowGeom window_of(const OpContext& ctx, const Shape& x, const std::vector<int64_t>& kernel,
                                 bool ceil_mode) {
  GeomContext g(ctx.node);
  return ops::window_geom(g, ops::spatial_dims(x), kernel, ceil_mode);
}

// Push-constant form of a 1-D or 2-D window (1-D runs as H = 1).
struct Window2DPush {
  int32_t H, W, OH, OW, SH, SW, DH, DW, PH, PW;
};

inline Window2DPush window_push(const ops::WindowGeom& g) {
  ops::Window2D w(g);
  return {int32_t(w.H), int32_t(w.W), int32_t(w.OH), int32_t(w.OW), int32_t(w.SH),
          int32_t(w.SW), int32_t(w.DH), int32_t(w.DW), int32_t(w.PH), int32_t(w.PW)};
}

}  // namespace kestrel::vulkan

// Clip (shaders/unary.comp): bounds from attributes before opset 11, from
// host inputs after; semantics of src/ops/clip.cpp.
#include <limits>

#include "backends/vulkan/ops/elementwise.h"

namespace kestrel::vulkan {
namespace {

float scalar_of(const OpContext& ctx, int i, float def) {
  if (!ctx.has_input(i)) return def;
  const Tensor& t = ctx.host_input(i);
  if (t.numel() != 1) ctx.fail("input ", i, " must be a scalar, got shape ", shape_str(t.shape()));
  return t.to_f32()[0];
}

void clip(OpContext& ctx) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (ctx.node.opset < 11) {
    lo = ctx.node.attr_f("min", lo);
    hi = ctx.node.attr_f("max", hi);
  } else {
    lo = scalar_of(ctx, 1, lo);
    hi = scalar_of(ctx, 2, hi);
  }
  record_unary(ctx, UnaryFn::Clip, lo, hi);
}

}  // namespace

KESTREL_VK_OP(Clip, {.record = clip, .host_inputs = {1, 2}});

}  // namespace kestrel::vulkan

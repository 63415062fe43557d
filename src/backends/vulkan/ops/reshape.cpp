// Reshape, Flatten, Squeeze and Unsqueeze: new shapes over the same device
// memory (no dispatch). Shapes come from src/ops/reshape_util.h, as on the CPU.
#include "backends/vulkan/ops/geom_context.h"
#include "backends/vulkan/ops/movement.h"
#include "ops/reshape_util.h"

namespace kestrel::vulkan {
namespace {

void alias(OpContext& ctx, const GpuTensor& x, Shape shape) {
  if (shape_numel(shape) != x.numel())
    ctx.fail("cannot view ", shape_str(x.shape), " as ", shape_str(shape));
  GpuTensor y = x;
  y.shape = std::move(shape);
  ctx.set_output(0, y);
}

void reshape(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  bool allowzero = ctx.node.opset >= 14 && ctx.node.attr_i("allowzero", 0) != 0;
  GeomContext g(ctx.node);
  alias(ctx, x, ops::reshape_target(g, x.shape, host_ints(ctx, 1), allowzero));
}

void flatten(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  GeomContext g(ctx.node);
  alias(ctx, x, ops::flatten_shape(g, x.shape, ctx.node.attr_i("axis", 1)));
}

void squeeze(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  std::vector<int64_t> axes;
  bool listed = ints_from_input_or_attr(ctx, 1, 13, "axes", axes);
  GeomContext g(ctx.node);
  alias(ctx, x, ops::squeeze_shape(g, x.shape, listed ? &axes : nullptr));
}

void unsqueeze(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  std::vector<int64_t> axes;
  if (!ints_from_input_or_attr(ctx, 1, 13, "axes", axes)) ctx.fail("axes are required");
  GeomContext g(ctx.node);
  alias(ctx, x, ops::unsqueeze_shape(g, x.shape, axes));
}

}  // namespace

KESTREL_VK_OP(Reshape, {.min_opset = 5, .record = reshape, .host_inputs = {1}});
KESTREL_VK_OP(Flatten, {.record = flatten});
KESTREL_VK_OP(Squeeze, {.record = squeeze, .host_inputs = {1}});
KESTREL_VK_OP(Unsqueeze, {.record = unsqueeze, .host_inputs = {1}});

}  // namespace kestrel::vulkan

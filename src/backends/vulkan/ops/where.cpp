// Where (shaders/where.comp), with broadcasting; semantics of src/ops/where.cpp.
#include "backends/vulkan/ops/movement.h"

namespace kestrel::vulkan {
namespace {

struct WherePush {
  uint32_t base, n;
  Dims6 dims, sc, sx, sy;
};

void where(OpContext& ctx) {
  const GpuTensor& c = ctx.input(0);
  const GpuTensor& x = ctx.input(1);
  const GpuTensor& y = ctx.input(2);
  if (c.dtype != DType::Bool) ctx.fail("condition must be bool, got ", dtype_name(c.dtype));
  if (x.dtype != y.dtype) ctx.fail("X is ", dtype_name(x.dtype), " but Y is ", dtype_name(y.dtype));
  Shape out = broadcast_pair(ctx, broadcast_pair(ctx, c.shape, x.shape), y.shape);
  require_rank(ctx, out);
  require_i32_indexing(ctx, shape_numel(out));
  GpuTensor& o = ctx.output(0, x.dtype, out);
  WherePush p{};
  p.dims = dims6(out);
  p.sc = broadcast_strides6(c.shape, out);
  p.sx = broadcast_strides6(x.shape, out);
  p.sy = broadcast_strides6(y.shape, out);
  ctx.dispatch_elements("where", {wide(x)}, {In(c), In(x), In(y), Out(o)}, &p, sizeof p, uint64_t(o.numel()));
}

}  // namespace

KESTREL_VK_OP(Where, {.min_opset = 9, .record = where});

}  // namespace kestrel::vulkan

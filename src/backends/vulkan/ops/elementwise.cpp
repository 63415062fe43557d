// The shared element-wise recordings (elementwise.h).
#include "backends/vulkan/ops/elementwise.h"

namespace kestrel::vulkan {
namespace {

struct UnaryPush {
  uint32_t base, n;
  float a, b;
};

}  // namespace

void record_unary(OpContext& ctx, UnaryFn act, float a, float b) {
  require_float(ctx, {0});
  const GpuTensor& x = ctx.input(0);
  GpuTensor& y = ctx.output(0, x.dtype, x.shape);
  UnaryPush p{0, 0, a, b};
  ctx.dispatch_elements("unary", {int32_t(act)}, {In(x), Out(y)}, &p, sizeof p, uint64_t(x.numel()));
}

// c = a OP b with broadcasting.
void record_binary_of(OpContext& ctx, int op, const GpuTensor& a, const GpuTensor& b, GpuTensor& out) {
  BroadcastPush p = broadcast_push(a.shape, b.shape, out.shape);
  bool same = a.shape == out.shape && b.shape == out.shape;
  ctx.dispatch_elements("binary", {op, same ? 0 : 1}, {In(a), In(b), Out(out)}, &p, sizeof p, uint64_t(out.numel()));
}

void record_binary(OpContext& ctx, int op) {
  require_float(ctx, {0, 1});
  const GpuTensor& a = ctx.input(0);
  const GpuTensor& b = ctx.input(1);
  Shape out = broadcast_pair(ctx, a.shape, b.shape);
  require_rank(ctx, out);
  if (a.dtype != b.dtype) ctx.fail("inputs have different types: ", dtype_name(a.dtype), " and ", dtype_name(b.dtype));
  record_binary_of(ctx, op, a, b, ctx.output(0, a.dtype, out));
}

}  // namespace kestrel::vulkan

// com.microsoft QLinearAdd and QLinearMul (shaders/qlinear_binary.comp), as
// ops/qlinear_binary.cpp has them: 8-bit tensors packed four to a word,
// broadcast over up to 6 dims; scales and zero points (one value each) read
// on the host.
#include "backends/vulkan/ops/requantize.h"

namespace kestrel::vulkan {
namespace {

template <int kOp>
void qlinear_binary(OpContext& ctx) {
  const GpuTensor& A = ctx.input(0);
  const GpuTensor& B = ctx.input(3);
  if (!A.is_byte() || A.dtype != B.dtype)
    ctx.fail("A and B must be one 8-bit type, got ", dtype_name(A.dtype), " and ", dtype_name(B.dtype));
  const ops::QParam a = host_qparam(ctx, 1, 2, A.dtype, "A"), b = host_qparam(ctx, 4, 5, B.dtype, "B");
  const ops::QParam c = host_qparam(ctx, 6, 7, A.dtype, "C");
  const Shape out = broadcast_pair(ctx, A.shape, B.shape);
  require_rank(ctx, out);
  require_int32_sizes(ctx, {shape_numel(out)});
  GpuTensor& C = ctx.output(0, A.dtype, out);
  if (C.numel() == 0) return;
  struct {
    BroadcastPush b;
    uint32_t count;
    float a_scale, b_scale, c_scale;
    int32_t a_zero, b_zero, c_zero;
  } p{broadcast_push(A.shape, B.shape, out), uint32_t(C.numel()), a.scale, b.scale, c.scale,
      a.zero_point, b.zero_point, c.zero_point};
  static_assert(sizeof p <= 128, "push constants are limited to 128 bytes");
  ctx.dispatch_elements("qlinear_binary", {kOp, A.dtype == DType::Int8}, {In(A), In(B), Out(C)}, &p, sizeof p,
                        (uint64_t(C.numel()) + 3) / 4);
}

}  // namespace

KESTREL_VK_OP(QLinearAdd, {.domain = "com.microsoft", .record = qlinear_binary<0>, .host_inputs = {1, 2, 4, 5, 6, 7}});
KESTREL_VK_OP(QLinearMul, {.domain = "com.microsoft", .record = qlinear_binary<1>, .host_inputs = {1, 2, 4, 5, 6, 7}});

}  // namespace kestrel::vulkan

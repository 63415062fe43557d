// com.microsoft QLinearAdd and QLinearMul (shaders/qlinear_binary.comp), as
// ops/qlinear_binary.cpp has them: 8-bit tensors packed four to a word,
// broadcast over up to 6 dims; scales and zero points (one value each) read
// on the host. com.kestrel QdqAdd records the same shader (qdq_add.cpp).
#include "backends/vulkan/ops/qlinear_binary.h"

#include "backends/vulkan/ops/requantize.h"

namespace kestrel::vulkan {

void record_qlinear_binary(OpContext& ctx, int op, bool qdq) {
  const GpuTensor& A = ctx.input(0);
  const GpuTensor& B = ctx.input(3);
  if (qdq) {
    if (A.shape != B.shape)
      ctx.fail("inputs a ", shape_str(A.shape), " and b ", shape_str(B.shape), " must have one shape");
    // The shader reads and writes one 8-bit type.
    if (A.dtype != B.dtype || !ctx.has_input(7) || ctx.host_input(7).dtype() != A.dtype)
      ctx.unsupported("inputs and output of more than one 8-bit type");
  }
  if (!A.is_byte() || A.dtype != B.dtype)
    ctx.fail("A and B must be one 8-bit type, got ", dtype_name(A.dtype), " and ", dtype_name(B.dtype));
  const ops::QParam a = host_qparam(ctx, 1, 2, A.dtype, "A"), b = host_qparam(ctx, 4, 5, B.dtype, "B");
  const ops::QParam c = host_qparam(ctx, 6, 7, A.dtype, "C");
  const ActParams act = qdq ? fused_activation(ctx.node) : ActParams{};
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
    float act_a, act_b;
  } p{broadcast_push(A.shape, B.shape, out), uint32_t(C.numel()), a.scale, b.scale, c.scale,
      a.zero_point, b.zero_point, c.zero_point, act.a, act.b};
  static_assert(sizeof p <= 128, "push constants are limited to 128 bytes");
  ctx.dispatch_elements("qlinear_binary", {op, A.dtype == DType::Int8, int32_t(act.act)}, {In(A), In(B), Out(C)}, &p,
                        sizeof p, (uint64_t(C.numel()) + 3) / 4);
}

namespace {

void qlinear_add(OpContext& ctx) { record_qlinear_binary(ctx, 0, false); }
void qlinear_mul(OpContext& ctx) { record_qlinear_binary(ctx, 1, false); }

}  // namespace

KESTREL_VK_OP(QLinearAdd, {.domain = "com.microsoft", .record = qlinear_add, .host_inputs = {1, 2, 4, 5, 6, 7}});
KESTREL_VK_OP(QLinearMul, {.domain = "com.microsoft", .record = qlinear_mul, .host_inputs = {1, 2, 4, 5, 6, 7}});

}  // namespace kestrel::vulkan

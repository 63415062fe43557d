// MatMul (shaders/gemm.comp, recorded by gemm_record.h as Gemm is): 1-D
// operands and broadcast batches are views through strides (plan_matmul).
// MatMulInteger (shaders/gemm_integer.comp): 8-bit operands (uint8 or int8,
// packed four to a word), zero points subtracted, exact int32 sums, as
// ops/matmul.cpp has it; the same views. Its zero points stay on the
// device: the activation's usually comes from DynamicQuantizeLinear there.
#include "backends/vulkan/ops/gemm_record.h"
#include "ops/gemm_util.h"

namespace kestrel::vulkan {
namespace {

void matmul(OpContext& ctx) {
  require_float(ctx, {0, 1});
  const GpuTensor& A = ctx.input(0);
  const GpuTensor& B = ctx.input(1);
  Shape out;
  const GemmPlan plan = plan_matmul(ctx, A.shape, B.shape, out);
  GpuTensor& Y = ctx.output(0, A.dtype, out);
  record_gemm(ctx, plan, A, B, nullptr, Y, fused_activation(ctx.node));
}

// The shader's zero-point mode for input `at` (0: none, 1: one value, 2:
// one per row of A or column of B, `count` of them), checked as the CPU
// checks it.
int32_t zero_point_mode(OpContext& ctx, int at, const GpuTensor& operand, int64_t count, const char* what) {
  if (!ctx.has_input(at)) return 0;
  const GpuTensor& z = ctx.input(at);
  if (std::string e = ops::int8_zero_point_error(what, operand.dtype, z.dtype, z.shape, count); !e.empty())
    ctx.fail(e);
  return z.numel() == 1 ? 1 : 2;
}

void matmul_integer(OpContext& ctx) {
  const GpuTensor& A = ctx.input(0);
  const GpuTensor& B = ctx.input(1);
  if (!A.is_byte() || !B.is_byte())
    ctx.fail("A and B must be uint8 or int8, got ", dtype_name(A.dtype), " and ", dtype_name(B.dtype));
  const int64_t M = A.shape.size() > 1 ? A.shape[A.shape.size() - 2] : 1, N = B.shape.size() > 1 ? B.shape.back() : 1;
  const int32_t a_zp = zero_point_mode(ctx, 2, A, M, "A"), b_zp = zero_point_mode(ctx, 3, B, N, "B");
  // Per-row zero points index the rows of each batch: no stacking of batches.
  Shape out;
  const GemmPlan plan = plan_matmul(ctx, A.shape, B.shape, out, /*stack=*/a_zp != 2);
  require_int32_sizes(ctx, {A.numel(), B.numel(), shape_numel(out)});
  GpuTensor& Y = ctx.output(0, DType::Int32, out);
  if (Y.numel() == 0) return;
  const GpuTensor& az = a_zp ? ctx.input(2) : A;  // bound but unread without a zero point
  const GpuTensor& bz = b_zp ? ctx.input(3) : B;
  record_gemm_tiles(ctx, "gemm_integer", {A.dtype == DType::Int8, B.dtype == DType::Int8, a_zp, b_zp},
                    {In(A), In(B), In(az), Out(Y), In(bz)}, plan, 64, 64);
}

}  // namespace

KESTREL_VK_OP(MatMul, {.record = matmul});
KESTREL_VK_OP(MatMulInteger, {.min_opset = 10, .record = matmul_integer});

}  // namespace kestrel::vulkan

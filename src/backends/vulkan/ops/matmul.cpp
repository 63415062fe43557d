// MatMul (shaders/gemm.comp, recorded by gemm_record.h as Gemm is): 1-D
// operands and broadcast batches are views through strides (plan_matmul).
// MatMulInteger (shaders/gemm_integer.comp): 8-bit operands (uint8 or int8,
// packed four to a word), zero points subtracted, exact int32 sums, as
// ops/matmul.cpp has it; the same views. Its zero points stay on the
// device: the activation's usually comes from DynamicQuantizeLinear there.
// QLinearMatMul: those sums into scratch, then requantized (requantize.h).
#include "backends/vulkan/ops/gemm_record.h"
#include "backends/vulkan/ops/requantize.h"
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

// The exact int32 product of 8-bit inputs a_at and b_at, their zero points
// two inputs on (MatMulInteger's layout and QLinearMatMul's), into the words
// make_y(output shape, M, N) gives once the operands are checked (null:
// nothing to compute).
template <typename MakeY>
void record_integer_product(OpContext& ctx, int a_at, int b_at, MakeY make_y) {
  constexpr int zp_step = 2;
  const GpuTensor& A = ctx.input(a_at);
  const GpuTensor& B = ctx.input(b_at);
  if (!A.is_byte() || !B.is_byte())
    ctx.fail("A and B must be uint8 or int8, got ", dtype_name(A.dtype), " and ", dtype_name(B.dtype));
  const int64_t M = A.shape.size() > 1 ? A.shape[A.shape.size() - 2] : 1, N = B.shape.size() > 1 ? B.shape.back() : 1;
  const int32_t a_zp = zero_point_mode(ctx, a_at + zp_step, A, M, "A");
  const int32_t b_zp = zero_point_mode(ctx, b_at + zp_step, B, N, "B");
  // Per-row zero points index the rows of each batch: no stacking of batches.
  Shape out;
  const GemmPlan plan = plan_matmul(ctx, A.shape, B.shape, out, /*stack=*/a_zp != 2);
  require_int32_sizes(ctx, {A.numel(), B.numel(), shape_numel(out)});
  const GpuTensor* Y = make_y(out, M, N);
  if (!Y) return;
  const GpuTensor& az = a_zp ? ctx.input(a_at + zp_step) : A;  // bound but unread without a zero point
  const GpuTensor& bz = b_zp ? ctx.input(b_at + zp_step) : B;
  record_gemm_tiles(ctx, "gemm_integer", {A.dtype == DType::Int8, B.dtype == DType::Int8, a_zp, b_zp},
                    {In(A), In(B), In(az), Out(*Y), In(bz)}, plan, 64, 64);
}

void matmul_integer(OpContext& ctx) {
  record_integer_product(ctx, 0, 1, [&](const Shape& out, int64_t, int64_t) -> const GpuTensor* {
    GpuTensor& Y = ctx.output(0, DType::Int32, out);
    return Y.numel() ? &Y : nullptr;
  });
}

void qlinear_matmul(OpContext& ctx) {
  DType y_type;
  const int32_t y_zero = output_zero_point(ctx, 7, y_type, ctx.input(0).dtype);
  const GpuTensor* Y = nullptr;
  GpuTensor acc;
  ops::RequantMultipliers mult;
  record_integer_product(ctx, 0, 3, [&](const Shape& out, int64_t M, int64_t N) -> const GpuTensor* {
    mult = ops::requant_multipliers(host_scales(ctx, 1, M, "a_scale"), host_scales(ctx, 4, N, "b_scale"),
                                    host_scales(ctx, 6, 1, "y_scale")[0], M, N);
    Y = &ctx.output(0, y_type, out);
    if (Y->numel() == 0) return nullptr;
    acc = ctx.temp_words(size_t(Y->numel()));
    return &acc;
  });
  if (Y && Y->numel()) record_requantize(ctx, acc, mult, nullptr, 1, 0, y_zero, *Y);
}

}  // namespace

KESTREL_VK_OP(MatMul, {.record = matmul});
KESTREL_VK_OP(MatMulInteger, {.min_opset = 10, .record = matmul_integer});
KESTREL_VK_OP(QLinearMatMul,
              {.min_opset = 10, .record = qlinear_matmul, .host_inputs = {1, 4, 6, 7}, .float32_node = true});

}  // namespace kestrel::vulkan

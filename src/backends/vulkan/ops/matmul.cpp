// MatMul (shaders/gemm.comp, recorded by gemm_record.h as Gemm is): 1-D
// operands and broadcast batches are views through strides (plan_matmul).
// MatMulInteger (shaders/gemm_integer.comp): 8-bit operands (uint8 or int8,
// packed four to a word), zero points subtracted, exact int32 sums, as
// ops/matmul.cpp has it; the same views. Its zero points stay on the
// device: the activation's usually comes from DynamicQuantizeLinear there.
// QLinearMatMul: those sums requantized (integer_product.h: in the int8
// tensor cores' epilogue, or a pass over int32 scratch).
#include "backends/vulkan/ops/gemm_record.h"
#include "backends/vulkan/ops/integer_product.h"
#include "backends/vulkan/ops/requantize.h"

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

void matmul_integer(OpContext& ctx) {
  record_integer_product(ctx, ctx.input(0), optional_input(ctx, 2), ctx.input(1), optional_input(ctx, 3),
                         [&](const Shape& out, int64_t, int64_t, IntegerFinish&) -> const GpuTensor* {
                           GpuTensor& Y = ctx.output(0, DType::Int32, out);
                           return Y.numel() ? &Y : nullptr;
                         });
}

void qlinear_matmul(OpContext& ctx) {
  DType y_type;
  const int32_t y_zero = output_zero_point(ctx, 7, y_type, ctx.input(0).dtype);
  GpuTensor bz;
  record_integer_product(ctx, ctx.input(0), optional_input(ctx, 2), ctx.input(3),
                         host_weight_zero_point(ctx, 5, ctx.input(3).dtype, bz),
                         [&](const Shape& out, int64_t M, int64_t N, IntegerFinish& f) -> const GpuTensor* {
                           f.kind = IntegerFinish::Kind::Requantize;
                           f.mult = ops::requant_multipliers(host_scales(ctx, 1, M, "a_scale"),
                                                             host_scales(ctx, 4, N, "b_scale"),
                                                             host_scales(ctx, 6, 1, "y_scale")[0], M, N);
                           f.y_zero = y_zero;
                           GpuTensor& Y = ctx.output(0, y_type, out);
                           return Y.numel() ? &Y : nullptr;
                         });
}

}  // namespace

KESTREL_VK_OP(MatMul, {.record = matmul});
KESTREL_VK_OP(MatMulInteger, {.min_opset = 10, .record = matmul_integer});
KESTREL_VK_OP(QLinearMatMul,
              {.min_opset = 10, .record = qlinear_matmul, .host_inputs = {1, 4, 5, 6, 7}, .float32_node = true});

}  // namespace kestrel::vulkan

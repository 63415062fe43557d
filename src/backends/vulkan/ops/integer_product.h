// The exact int32 product of two 8-bit operands on the device, shared by
// MatMulInteger, QLinearMatMul (ops/matmul.cpp), MatMulIntegerToFloat and
// DynamicQuantizeMatMul (ops/matmul_integer_to_float.cpp):
//   Y[b, m, n] = sum_k (A[b, m, k] - a_zero) (B[b, k, n] - b_zero)
// with A and B uint8 or int8 packed four to a word, a_zero one value or one
// per row of A, b_zero one value or one per column of B (either may be
// absent). shaders/gemm_integer.comp computes it on every device;
// shaders/gemm_integer_coop.comp on int8 tensor cores where the device has
// them and the product is one matrix by one (its batches stacked into rows).
#pragma once
#include "backends/vulkan/ops/gemm_record.h"
#include "ops/gemm_util.h"

namespace kestrel::vulkan {

// Input i where the node has it, else null (an optional zero point).
inline const GpuTensor* optional_input(OpContext& ctx, int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

// The shader's zero-point mode for the zero point `z` of `operand` (null:
// none): 0 none, 1 one value, 2 one per row of A or column of B (`count` of
// them), checked as the CPU checks it.
inline int32_t zero_point_mode(OpContext& ctx, const GpuTensor* z, const GpuTensor& operand, int64_t count,
                               const char* what) {
  if (!z) return 0;
  if (std::string e = ops::int8_zero_point_error(what, operand.dtype, z->dtype, z->shape, count); !e.empty())
    ctx.fail(e);
  return z->numel() == 1 ? 1 : 2;
}

// Whether the int8 tensor cores take `plan` (gemm_integer_coop.comp).
bool int8_coop_product(const OpContext& ctx, const GemmPlan& plan);
// Records `plan` on them: the operands' row and column sums its zero points
// need (integer_sums.comp), then the product into Y.
void record_int8_coop_product(OpContext& ctx, const GemmPlan& plan, const GpuTensor& A, const GpuTensor* az,
                              int32_t a_zp, const GpuTensor& B, const GpuTensor* bz, int32_t b_zp,
                              const GpuTensor& Y);

// Records the product of A and B (zero points az, bz; null: none) into the
// int32 words make_y(output shape, M, N) gives once the operands are checked
// (null: nothing to compute). Y is dense [batch..., M, N].
template <typename MakeY>
void record_integer_product(OpContext& ctx, const GpuTensor& A, const GpuTensor* az, const GpuTensor& B,
                            const GpuTensor* bz, MakeY make_y) {
  if (!A.is_byte() || !B.is_byte())
    ctx.fail("A and B must be uint8 or int8, got ", dtype_name(A.dtype), " and ", dtype_name(B.dtype));
  const int64_t M = A.shape.size() > 1 ? A.shape[A.shape.size() - 2] : 1, N = B.shape.size() > 1 ? B.shape.back() : 1;
  const int32_t a_zp = zero_point_mode(ctx, az, A, M, "A");
  const int32_t b_zp = zero_point_mode(ctx, bz, B, N, "B");
  // Per-row zero points index the rows of each batch: no stacking of batches.
  Shape out;
  const GemmPlan plan = plan_matmul(ctx, A.shape, B.shape, out, /*stack=*/a_zp != 2);
  require_int32_sizes(ctx, {A.numel(), B.numel(), shape_numel(out)});
  const GpuTensor* Y = make_y(out, M, N);
  if (!Y) return;
  if (int8_coop_product(ctx, plan)) return record_int8_coop_product(ctx, plan, A, az, a_zp, B, bz, b_zp, *Y);
  record_gemm_tiles(ctx, "gemm_integer", {A.dtype == DType::Int8, B.dtype == DType::Int8, a_zp, b_zp},
                    {In(A), In(B), In(az ? *az : A), Out(*Y), In(bz ? *bz : B)}, plan, 64, 64);
}

}  // namespace kestrel::vulkan

// The exact int32 product of two 8-bit operands on the device, shared by
// MatMulInteger, QLinearMatMul (ops/matmul.cpp), MatMulIntegerToFloat and
// DynamicQuantizeMatMul (ops/matmul_integer_to_float.cpp):
//   Y[b, m, n] = sum_k (A[b, m, k] - a_zero) (B[b, k, n] - b_zero)
// with A and B uint8 or int8 packed four to a word, a_zero one value or one
// per row of A, b_zero one value or one per column of B (either may be
// absent). shaders/gemm_integer.comp computes it on every device; where the
// product is one matrix by one (its batches stacked into rows),
// shaders/gemm_integer_coop.comp on int8 tensor cores where the device has
// them, else shaders/gemm_integer_dot.comp on packed int8 dot products where
// they are accelerated (VulkanOptions::integer_dot).
#pragma once
#include "backends/vulkan/ops/gemm_record.h"
#include "ops/gemm_util.h"
#include "ops/requantize.h"

namespace kestrel::vulkan {

// Input i where the node has it, else null (an optional zero point).
inline const GpuTensor* optional_input(OpContext& ctx, int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

// A weight's zero point read on the host (input `at`, which the op lists
// among its host inputs; null where absent): null too where there is nothing
// to subtract (an int8 weight's zeros, the usual symmetric quantization,
// which spares the product A's row sums), else its bytes on the device,
// packed as the kernels read them.
const GpuTensor* host_weight_zero_point(OpContext& ctx, int at, DType weight_type, GpuTensor& storage);

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

// What becomes of the int32 sums (the node's output Y):
//   Sums        Y holds them (MatMulInteger);
//   Requantize  Y is 8-bit: each sum times its multiplier (ops/requantize.h:
//               one value, or one per column in `mult`), rounded half to
//               even, plus y_zero, saturated (QLinearMatMul);
//   Dequantize  Y is float32: float(sum) * (a_scale * b_scale[n]) [+
//               bias[n]] in that rounding order (MatMulIntegerToFloat,
//               DynamicQuantizeMatMul).
// The tensor-core and dot-product kernels finish the sums as they store them
// where Y's layout allows (integer_product_interface.glsl); elsewhere a pass
// over int32 scratch does (requantize.comp, dequantize_product.comp).
struct IntegerFinish {
  enum class Kind { Sums, Requantize, Dequantize };
  Kind kind = Kind::Sums;
  ops::RequantMultipliers mult;     // Requantize
  int32_t y_zero = 0;               // Requantize
  const GpuTensor* a_scale = nullptr;  // Dequantize: one float32 on the device
  std::vector<float> b_scale;          // Dequantize: one value or one per column
  const GpuTensor* bias = nullptr;     // Dequantize: N float32, or null
};

// Records the product whose plan, operands and zero-point modes
// record_integer_product worked out, finished into Y.
void record_finished_product(OpContext& ctx, const GemmPlan& plan, const GpuTensor& A, const GpuTensor* az,
                             int32_t a_zp, const GpuTensor& B, const GpuTensor* bz, int32_t b_zp, const GpuTensor& Y,
                             const IntegerFinish& finish);

// Records the product of A and B (zero points az, bz; null: none) into the
// output prepare(output shape, M, N, finish) gives once the operands are
// checked, having set `finish` (null: nothing to compute). Y is dense
// [batch..., M, N].
template <typename Prepare>
void record_integer_product(OpContext& ctx, const GpuTensor& A, const GpuTensor* az, const GpuTensor& B,
                            const GpuTensor* bz, Prepare prepare) {
  if (!A.is_byte() || !B.is_byte())
    ctx.fail("A and B must be uint8 or int8, got ", dtype_name(A.dtype), " and ", dtype_name(B.dtype));
  const int64_t M = A.shape.size() > 1 ? A.shape[A.shape.size() - 2] : 1, N = B.shape.size() > 1 ? B.shape.back() : 1;
  const int32_t a_zp = zero_point_mode(ctx, az, A, M, "A");
  const int32_t b_zp = zero_point_mode(ctx, bz, B, N, "B");
  // Per-row zero points index the rows of each batch: no stacking of batches.
  Shape out;
  const GemmPlan plan = plan_matmul(ctx, A.shape, B.shape, out, /*stack=*/a_zp != 2);
  require_int32_sizes(ctx, {A.numel(), B.numel(), shape_numel(out)});
  IntegerFinish finish;
  const GpuTensor* Y = prepare(out, M, N, finish);
  if (!Y) return;
  record_finished_product(ctx, plan, A, az, a_zp, B, bz, b_zp, *Y, finish);
}

}  // namespace kestrel::vulkan

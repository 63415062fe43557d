// ONNX Runtime's contrib ops (domain com.microsoft) that multiply 8-bit
// matrices exactly in int32 and give float: Y = float(acc) * (a_scale *
// b_scale[n]) + bias[n], the order ONNX Runtime rounds in (bit for bit:
// tests/python/test_microsoft_ops.py).
//   - DynamicQuantizeMatMul (what its dynamic quantization writes for a
//     MatMul): A float, quantized first as DynamicQuantizeLinear quantizes
//     it. Inputs: A (float, [..., K]), B (uint8 or int8, [K, N]), b_scale
//     (one value or N), b_zero_point (optional, B's type, one value or N),
//     bias (optional float, N).
//   - MatMulIntegerToFloat (what it makes of a QDQ MatMul whose output is
//     not quantized; Kestrel too, passes/fuse_qdq_matmul.cpp): A already
//     8-bit. Inputs: A, B, a_scale (one value), b_scale, a_zero_point
//     (optional, one value), b_zero_point, bias.
#include "ops/common.h"
#include "ops/gemm_util.h"
#include "ops/quantize_linear.h"
#include "ops/requantize.h"

namespace kestrel::ops {
namespace {

// [..., K] x [K, N] -> [..., N]; fails naming the shapes otherwise.
Shape product_shape(const KernelContext& ctx, const Tensor& A, const Tensor& B) {
  if (A.rank() < 1 || B.rank() != 2 || A.shape().back() != B.dim(0))
    ctx.fail("A ", shape_str(A.shape()), " and B ", shape_str(B.shape()), " do not multiply: B must be [K, N] with K A's last dim");
  Shape out = A.shape();
  out.back() = B.dim(1);
  return out;
}

// Y = float(sum_k a[m, k] (B[k, n] - zb)) * (a_scale * b_scale[n]) [+ bias[n]],
// a holding A minus its zero point; inputs b_at (B), b_at + 1 (b_scale),
// bz_at (b_zero_point), bias_at.
void scaled_product(KernelContext& ctx, const std::vector<int32_t>& a, float a_scale, int b_at, int bs_at, int bz_at,
                    int bias_at, const Shape& out) {
  const Tensor& B = ctx.input(b_at);
  const int64_t K = B.dim(0), N = B.dim(1), M = K ? int64_t(a.size()) / K : 0;
  const std::vector<float> b_scale = read_scales(ctx, bs_at, N, "b_scale");
  const Tensor* bzp = ctx.has_input(bz_at) ? &ctx.input(bz_at) : nullptr;
  std::vector<float> bias;
  if (ctx.has_input(bias_at)) {
    bias = ctx.input(bias_at).to_f32();
    if (int64_t(bias.size()) != N) ctx.fail("bias has shape ", shape_str(ctx.input(bias_at).shape()), ", not [", N, "]");
  }
  std::vector<int32_t> b = widen_int8(ctx, B, bzp, [&](int64_t i) { return i % N; }, N, "B");
  std::vector<int32_t> acc(size_t(M * N));
  igemm(ctx, M, N, K, a.data(), b.data(), acc.data());
  Tensor& Y = ctx.output(0, DType::Float32, out);
  float* y = Y.data<float>();
  std::vector<float> scale(static_cast<size_t>(N));
  for (int64_t j = 0; j < N; ++j) scale[size_t(j)] = a_scale * b_scale[b_scale.size() == 1 ? 0 : size_t(j)];
  for (int64_t i = 0; i < M * N; ++i) {
    y[i] = float(acc[size_t(i)]) * scale[size_t(i % N)];
    if (!bias.empty()) y[i] += bias[size_t(i % N)];
  }
}

void run_dynamic_quantize_matmul(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  if (A.dtype() != DType::Float32) ctx.fail("A must be float, got ", dtype_name(A.dtype()));
  const Shape out = product_shape(ctx, A, ctx.input(1));
  std::vector<uint8_t> q(size_t(A.numel()));
  const DynamicQuantized aq = dynamic_quantize(ctx, A.data<float>(), A.numel(), q.data());
  std::vector<int32_t> a(q.size());
  for (size_t i = 0; i < q.size(); ++i) a[i] = int32_t(q[i]) - int32_t(aq.zero_point);
  scaled_product(ctx, a, aq.scale, 1, 2, 3, 4, out);
}

void run_matmul_integer_to_float(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Shape out = product_shape(ctx, A, ctx.input(1));
  const std::vector<float> a_scale = read_scales(ctx, 2, 1, "a_scale");
  const Tensor* azp = ctx.has_input(4) ? &ctx.input(4) : nullptr;
  if (azp && azp->numel() != 1) ctx.fail("a_zero_point must be one value, got ", shape_str(azp->shape()));
  const std::vector<int32_t> a = widen_int8(ctx, A, azp, [](int64_t) { return 0; }, 1, "A");
  scaled_product(ctx, a, a_scale[0], 1, 3, 5, 6, out);
}

}  // namespace

KESTREL_OP(DynamicQuantizeMatMul, {.domain = "com.microsoft", .run = run_dynamic_quantize_matmul, .uses_products = true});
KESTREL_OP(MatMulIntegerToFloat, {.domain = "com.microsoft", .run = run_matmul_integer_to_float, .uses_products = true});

}  // namespace kestrel::ops

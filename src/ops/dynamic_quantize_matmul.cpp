// com.microsoft DynamicQuantizeMatMul (ONNX Runtime's contrib op, which its
// dynamic quantization writes for MatMul): A quantized as
// DynamicQuantizeLinear quantizes it, times an 8-bit B with its zero point,
// exact in int32, Y = float(acc) * (a_scale * b_scale[n]) + bias[n], the
// order ONNX Runtime rounds in (bit for bit: tests/python/test_microsoft_ops.py).
//
// Inputs: A (float, [..., K]), B (uint8 or int8, [K, N]), b_scale (one
// value or N), b_zero_point (optional, B's type, one value or N), bias
// (optional float, N).
#include "ops/common.h"
#include "ops/gemm_util.h"
#include "ops/quantize_linear.h"
#include "ops/requantize.h"

namespace kestrel::ops {
namespace {

void run_dynamic_quantize_matmul(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  if (A.dtype() != DType::Float32) ctx.fail("A must be float, got ", dtype_name(A.dtype()));
  if (A.rank() < 1 || B.rank() != 2 || A.shape().back() != B.dim(0))
    ctx.fail("A ", shape_str(A.shape()), " and B ", shape_str(B.shape()), " do not multiply: B must be [K, N] with K A's last dim");
  const int64_t K = B.dim(0), N = B.dim(1), M = K ? A.numel() / K : 0;
  const std::vector<float> b_scale = read_scales(ctx, 2, N, "b_scale");
  const Tensor* bzp = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  std::vector<float> bias;
  if (ctx.has_input(4)) {
    bias = ctx.input(4).to_f32();
    if (int64_t(bias.size()) != N) ctx.fail("bias has shape ", shape_str(ctx.input(4).shape()), ", not [", N, "]");
  }
  std::vector<uint8_t> q(size_t(A.numel()));
  const DynamicQuantized aq = dynamic_quantize(ctx, A.data<float>(), A.numel(), q.data());
  std::vector<int32_t> a(q.size());
  for (size_t i = 0; i < q.size(); ++i) a[i] = int32_t(q[i]) - int32_t(aq.zero_point);
  std::vector<int32_t> b = widen_int8(ctx, B, bzp, [&](int64_t i) { return i % N; }, N, "B");
  std::vector<int32_t> acc(size_t(M * N));
  igemm(ctx, M, N, K, a.data(), b.data(), acc.data());
  Shape out = A.shape();
  out.back() = N;
  Tensor& Y = ctx.output(0, DType::Float32, out);
  float* y = Y.data<float>();
  std::vector<float> scale(static_cast<size_t>(N));
  for (int64_t j = 0; j < N; ++j) scale[size_t(j)] = aq.scale * b_scale[b_scale.size() == 1 ? 0 : size_t(j)];
  for (int64_t i = 0; i < M * N; ++i) {
    y[i] = float(acc[size_t(i)]) * scale[size_t(i % N)];
    if (!bias.empty()) y[i] += bias[size_t(i % N)];
  }
}

}  // namespace

KESTREL_OP(DynamicQuantizeMatMul, {.domain = "com.microsoft", .run = run_dynamic_quantize_matmul, .uses_products = true});

}  // namespace kestrel::ops

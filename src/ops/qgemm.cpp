// com.microsoft QGemm (ONNX Runtime's contrib op, which its quantization
// tools write for Gemm): a Gemm of 8-bit operands with zero points, exact in
// int32, scaled to float as ONNX Runtime scales it, Y = float(A'B' + C) *
// (alpha * a_scale * b_scale[n]), and, given y_scale, quantized as
// QuantizeLinear quantizes (checked bit for bit against ONNX Runtime:
// tests/python/test_microsoft_ops.py).
//
// Inputs: A, a_scale, a_zero_point, B, b_scale, b_zero_point, C (int32 bias
// in the accumulator's units: one value, N, or M x N), y_scale, y_zero_point
// (uint8 or int8; uint8 when y_scale comes without it). a's scale and zero
// point are one value; b's one value or N (per column of B').
// Attributes: alpha (1), transA, transB (0).
#include "ops/common.h"
#include "ops/gemm_util.h"
#include "ops/quantize_linear.h"
#include "ops/requantize.h"

namespace kestrel::ops {
namespace {

void run_qgemm(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(3);
  if (A.rank() != 2 || B.rank() != 2)
    ctx.fail("A and B must be matrices, got ", shape_str(A.shape()), " and ", shape_str(B.shape()));
  const bool ta = ctx.node.attr_i("transA", 0) != 0, tb = ctx.node.attr_i("transB", 0) != 0;
  const float alpha = ctx.node.attr_f("alpha", 1.0f);
  const int64_t M = ta ? A.dim(1) : A.dim(0), K = ta ? A.dim(0) : A.dim(1);
  const int64_t N = tb ? B.dim(0) : B.dim(1), KB = tb ? B.dim(1) : B.dim(0);
  if (K != KB) ctx.fail("inner dimensions differ: A ", shape_str(A.shape()), " and B ", shape_str(B.shape()),
                        " (transA ", int(ta), ", transB ", int(tb), ")");
  const std::vector<float> a_scale = read_scales(ctx, 1, 1, "a_scale");
  const std::vector<float> b_scale = read_scales(ctx, 4, N, "b_scale");
  const Tensor* azp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* bzp = ctx.has_input(5) ? &ctx.input(5) : nullptr;
  // Widened minus their zero points, then laid out as A'[M, K] and B'[K, N].
  std::vector<int32_t> a = widen_int8(ctx, A, azp, [](int64_t) { return 0; }, 1, "A");
  std::vector<int32_t> b = widen_int8(
      ctx, B, bzp, [&](int64_t i) { return tb ? i / K : i % N; }, N, "B");
  auto transposed = [](const std::vector<int32_t>& x, int64_t rows, int64_t cols) {
    std::vector<int32_t> t(x.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) t[size_t(c * rows + r)] = x[size_t(r * cols + c)];
    return t;
  };
  if (ta) a = transposed(a, K, M);
  if (tb) b = transposed(b, N, K);
  std::vector<int32_t> acc(size_t(M * N));
  igemm(ctx, M, N, K, a.data(), b.data(), acc.data());
  if (ctx.has_input(6)) {
    const Tensor& C = ctx.input(6);
    if (C.dtype() != DType::Int32) ctx.fail("C must be int32, got ", dtype_name(C.dtype()));
    const int64_t n = C.numel();
    if (n != 1 && n != N && n != M * N)
      ctx.fail("C has shape ", shape_str(C.shape()), ": it must hold 1, N (", N, ") or M x N (", M * N, ") values");
    const int32_t* c = C.data<int32_t>();
    // Wrapping as int32 does (and ONNX Runtime's sum): no overflow is undefined here.
    for (int64_t i = 0; i < M * N; ++i)
      acc[size_t(i)] = int32_t(uint32_t(acc[size_t(i)]) + uint32_t(c[n == 1 ? 0 : n == N ? i % N : i]));
  }
  // ONNX Runtime's order: alpha times a_scale, times b_scale, times the sum.
  std::vector<float> scale(static_cast<size_t>(N));
  for (int64_t j = 0; j < N; ++j) scale[size_t(j)] = (alpha * a_scale[0]) * b_scale[b_scale.size() == 1 ? 0 : size_t(j)];
  std::vector<float> y(size_t(M * N));
  for (int64_t i = 0; i < M * N; ++i) y[size_t(i)] = float(acc[size_t(i)]) * scale[size_t(i % N)];
  if (!ctx.has_input(7)) {
    Tensor& Y = ctx.output(0, DType::Float32, {M, N});
    std::copy(y.begin(), y.end(), Y.data<float>());
    return;
  }
  const std::vector<float> y_scale = read_scales(ctx, 7, 1, "y_scale");
  const Tensor* yzp = ctx.has_input(8) ? &ctx.input(8) : nullptr;
  if (yzp && yzp->numel() != 1) ctx.fail("y_zero_point must be one value, got ", shape_str(yzp->shape()));
  const int32_t zp = yzp ? int32_t(yzp->to_i64()[0]) : 0;
  Tensor& Y = ctx.output(0, yzp ? yzp->dtype() : DType::UInt8, {M, N});
  dispatch_q8(ctx, Y.dtype(), [&](auto* tag) {
    using Q = std::remove_pointer_t<decltype(tag)>;
    quantize_floats(y.data(), y_scale[0], zp, Y.data<Q>(), M * N);
  });
}

}  // namespace

KESTREL_OP(QGemm, {.domain = "com.microsoft", .run = run_qgemm, .uses_products = true});

}  // namespace kestrel::ops

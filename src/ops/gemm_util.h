// Matrix-multiply building blocks for MatMul, Gemm, Einsum and the
// convolutions: the run's float and exact int32 products, and the
// im2col/col2im lowerings of sliding windows.
#pragma once
#include <cstdint>
#include <string>

#include "ops/common.h"
#include "ops/conv_util.h"
#include "ops/products.h"

namespace kestrel::ops {

// The run's matrix products (KernelContext::products, products.h), with its
// thread count. Inside a parallel_for task a product stays on that thread.
inline void sgemm(const KernelContext& ctx, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  ctx.products().sgemm(ctx.threads(), trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline void sgemm_batched(const KernelContext& ctx, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                          const float* A, int64_t lda, const int64_t* a_off, const float* B, int64_t ldb,
                          const int64_t* b_off, float* C, int64_t ldc, const int64_t* c_off, int64_t batch) {
  ctx.products().sgemm_batched(ctx.threads(), trans_a, trans_b, M, N, K, A, lda, a_off, B, ldb, b_off, C, ldc, c_off,
                               batch);
}
inline void igemm(const KernelContext& ctx, int64_t M, int64_t N, int64_t K, const int32_t* A, const int32_t* B,
                  int32_t* C) {
  ctx.products().igemm(ctx.threads(), M, N, K, A, B, C);
}

// Gathers the windows for output positions [o0, o1) of one image with
// `channels` channels laid out channel-major (x: channels x in_size) into
// col: (channels * kernel_size) rows x (o1 - o0) columns. Padding reads 0.
template <typename T>
void im2col(const WindowGeom& g, const T* x, int64_t channels, int64_t o0, int64_t o1, T* col);

// The transpose of im2col for few positions: row p (of o1 - o0) holds output
// position o0 + p's window, channel-major, (channels * kernel_size) long, to
// meet the weights as the narrow side of a product (1-D and 2-D windows).
void im2row(const WindowGeom& g, const float* x, int64_t channels, int64_t o0, int64_t o1, float* rows);

// The adjoint of im2col for output positions [o0, o1): adds each column
// entry back into its input position (x must be zeroed or hold a bias).
void col2im(const WindowGeom& g, const float* col, int64_t channels, int64_t o0, int64_t o1, float* x);

// What is wrong with an 8-bit operand's zero point (`what`: "A", "B"), or ""
// where it is fine: it takes the operand's type and is one value or
// `zp_count` (one per row of A, per column of B). Every backend's integer
// products check with it.
inline std::string int8_zero_point_error(const char* what, DType operand, DType zp, const Shape& zp_shape,
                                         int64_t zp_count) {
  if (zp != operand)
    return std::string(what) + " zero point type " + dtype_name(zp) + " differs from " + dtype_name(operand);
  const int64_t n = shape_numel(zp_shape);
  if (n != 1 && n != zp_count)
    return std::string(what) + " zero point " + shape_str(zp_shape) + " must be a scalar or hold " +
           std::to_string(zp_count) + " values";
  return "";
}

// Widens an 8-bit operand to Out (int32, or float, which holds every value
// exactly) minus its zero point; zp_of(i) picks the zero point index for
// element i (0 for a scalar zero point).
template <typename Out = int32_t, typename F>
std::vector<Out> widen_int8(const KernelContext& ctx, const Tensor& t, const Tensor* zp, F zp_of, int64_t zp_count,
                           const char* what) {
  if (t.dtype() != DType::UInt8 && t.dtype() != DType::Int8)
    ctx.fail(what, " must be uint8 or int8, got ", dtype_name(t.dtype()));
  std::vector<int64_t> z{0};
  if (zp) {
    if (std::string e = int8_zero_point_error(what, t.dtype(), zp->dtype(), zp->shape(), zp_count); !e.empty())
      ctx.fail(e);
    z = zp->to_i64();
  }
  int64_t n = t.numel();
  std::vector<Out> out(static_cast<size_t>(n));
  auto fill = [&](auto* src) {
    for (int64_t i = 0; i < n; ++i) out[size_t(i)] = Out(int32_t(src[i]) - int32_t(z[z.size() == 1 ? 0 : size_t(zp_of(i))]));
  };
  if (t.dtype() == DType::UInt8)
    fill(t.data<uint8_t>());
  else
    fill(t.data<int8_t>());
  return out;
}

}  // namespace kestrel::ops

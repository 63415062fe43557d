// The matrix products op kernels are built on (MatMul, Gemm, Einsum, the
// recurrent ops, ConvTranspose, the integer ops). An op's kernel says what to
// multiply; how is the backend's: a kernel asks its context for `products()`,
// which is the plain loops below unless the backend that runs it has faster
// ones (the CPU backend's oneDNN and AVX kernels, backends/cpu/fast_products.h).
// So one definition of each op serves as both the oracle and the fast path,
// and the two differ only in how their sums are ordered.
#pragma once
#include <cstdint>

namespace kestrel::ops {

class Products {
 public:
  virtual ~Products() = default;
  // C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, all row-major.
  // `threads` is the most threads the product may use (the run's); called
  // inside a parallel region (a parallel_for task) it stays on the calling
  // thread. beta == 0 ignores C's contents.
  virtual void sgemm(int threads, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                     const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                     int64_t ldc) const = 0;
  // Many independent products of one shape: batch b multiplies A + a_off[b]
  // by B + b_off[b] into C + c_off[b] (alpha 1, beta 0).
  virtual void sgemm_batched(int threads, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                             int64_t lda, const int64_t* a_off, const float* B, int64_t ldb, const int64_t* b_off,
                             float* C, int64_t ldc, const int64_t* c_off, int64_t batch) const = 0;
  // C[M,N] = A[M,K] * B[K,N] exactly in int32 (row-major, dense). The
  // operands are 8-bit values minus their zero points, every entry in
  // [-255, 255], so no sum of K <= 2^15 products can overflow.
  virtual void igemm(int threads, int64_t M, int64_t N, int64_t K, const int32_t* A, const int32_t* B,
                     int32_t* C) const = 0;
};

// The plain loops: each output a sum over k in order, accumulated in float
// (int32 for igemm); rows of C split across threads, which changes no result.
const Products& reference_products();

}  // namespace kestrel::ops

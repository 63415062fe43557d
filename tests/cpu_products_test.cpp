// The CPU backend's fast products (backends/cpu/fast_products.h) against the
// reference products (ops/products.h), and the reference against a double
// sum: every transpose, alpha and beta, widths on and past the narrow
// kernels' 8, padded leading dimensions, batches, and exact int32 products
// past the float GEMM's 4096-long exact blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backends/cpu/fast_products.h"
#include "ops/products.h"

using namespace kestrel;

namespace {

struct Problem {
  bool ta, tb;
  int64_t M, N, K;
  float alpha, beta;
};

// C = alpha op(A) op(B) + beta C on `p`, from the same starting C (padding
// between rows of C holds -99 and must stay so).
std::vector<float> product(const ops::Products& p, const Problem& q, const std::vector<float>& A,
                           const std::vector<float>& B, int64_t lda, int64_t ldb, int64_t ldc, int threads) {
  std::vector<float> C(size_t(q.M * ldc), -99.f);
  for (int64_t i = 0; i < q.M; ++i)
    for (int64_t j = 0; j < q.N; ++j) C[size_t(i * ldc + j)] = 0.25f * float((i * 7 + j) % 5);
  p.sgemm(threads, q.ta, q.tb, q.M, q.N, q.K, q.alpha, A.data(), lda, B.data(), ldb, q.beta, C.data(), ldc);
  return C;
}

}  // namespace

TEST(CpuProducts, FastAgreesWithReferenceAndBothWithADoubleSum) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  int checked = 0;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t M : {1, 5, 8, 37})
        for (int64_t N : {1, 3, 8, 9, 70})
          for (int64_t K : {1, 8, 29, 300})
            for (auto [alpha, beta] : {std::pair{1.f, 0.f}, std::pair{0.5f, -2.f}}) {
              const Problem q{ta, tb, M, N, K, alpha, beta};
              const int64_t lda = (ta ? M : K) + 2, ldb = (tb ? K : N) + 1, ldc = N + 3;
              std::vector<float> A(size_t((ta ? K : M) * lda)), B(size_t((tb ? N : K) * ldb));
              for (float& v : A) v = u(rng);
              for (float& v : B) v = u(rng);
              auto ref = product(ops::reference_products(), q, A, B, lda, ldb, ldc, 2);
              auto fast = product(backends::cpu::fast_products(), q, A, B, lda, ldb, ldc, 2);
              double worst_fast = 0, worst_ref = 0;
              for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j) {
                  double sum = 0;
                  for (int64_t k = 0; k < K; ++k)
                    sum += double(ta ? A[size_t(k * lda + i)] : A[size_t(i * lda + k)]) *
                           (tb ? B[size_t(j * ldb + k)] : B[size_t(k * ldb + j)]);
                  const double want = alpha * sum + beta * 0.25 * double((i * 7 + j) % 5);
                  worst_ref = std::max(worst_ref, std::abs(ref[size_t(i * ldc + j)] - want));
                  worst_fast = std::max(worst_fast, std::abs(fast[size_t(i * ldc + j)] - double(ref[size_t(i * ldc + j)])));
                }
              // float32 sums of K terms of size <= 1: errors of a few ulps times sqrt(K).
              const double tol = 1e-5 * std::sqrt(double(K)) * 4;
              EXPECT_LE(worst_ref, tol) << "reference M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb;
              EXPECT_LE(worst_fast, 2 * tol) << "fast M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb;
              for (int64_t i = 0; i < M; ++i) {
                EXPECT_EQ(ref[size_t(i * ldc + N)], -99.f);
                EXPECT_EQ(fast[size_t(i * ldc + N)], -99.f);
              }
              ++checked;
            }
  EXPECT_EQ(checked, 2 * 2 * 4 * 5 * 4 * 2);
}

TEST(CpuProducts, BatchedFastAgreesWithReference) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto [M, N, K, batch] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{3, 5, 7, 1}, {19, 21, 16, 12},
                                {130, 140, 120, 3}}) {
    std::vector<float> A(size_t(batch * M * K)), B(size_t(batch * K * N));
    for (float& v : A) v = u(rng);
    for (float& v : B) v = u(rng);
    std::vector<int64_t> ao, bo, co;
    for (int64_t b = 0; b < batch; ++b) ao.push_back(b * M * K), bo.push_back(b * K * N), co.push_back(b * M * N);
    std::vector<float> ref(size_t(batch * M * N)), fast(ref.size());
    ops::reference_products().sgemm_batched(2, false, false, M, N, K, A.data(), K, ao.data(), B.data(), N, bo.data(),
                                            ref.data(), N, co.data(), batch);
    backends::cpu::fast_products().sgemm_batched(2, false, false, M, N, K, A.data(), K, ao.data(), B.data(), N,
                                                 bo.data(), fast.data(), N, co.data(), batch);
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, double(std::abs(ref[i] - fast[i])));
    EXPECT_LE(worst, 1e-5 * std::sqrt(double(K)) * 8) << "M=" << M << " N=" << N << " K=" << K << " batch=" << batch;
  }
}

// Operands that fit oneDNN's u8 x s8 GEMM (each within 256 consecutive
// values, as 8-bit weights and activations minus their zero points are) take
// it on CPUs with AVX-512 VNNI; its sums are exact too, every shift included.
TEST(CpuProducts, IntegerProductsOnTheU8S8PathAreExactlyEqual) {
  std::mt19937 rng(17);
  // (A from a_lo, B from b_lo, each over 256 values: uint8 weights with zero points 119, 0 and 255, int8 ones, ...)
  for (auto [M, N, K, a_lo, b_lo] :
       {std::tuple<int64_t, int64_t, int64_t, int32_t, int32_t>{64, 1000, 576, -119, -255}, {17, 333, 147, 0, 0},
        {5, 4096, 64, -128, -128}, {3, 70, 5000, -255, -7}, {8, 600, 100, 0, 0}}) {
    std::uniform_int_distribution<int32_t> ua(a_lo, a_lo + 255), ub(b_lo, b_lo + 255);
    std::vector<int32_t> A(size_t(M * K)), B(size_t(K * N));
    for (int32_t& v : A) v = ua(rng);
    for (int32_t& v : B) v = ub(rng);
    A[0] = a_lo, A[1] = a_lo + 255, B[0] = b_lo, B[1] = b_lo + 255;  // both ends of each range
    std::vector<int32_t> ref(size_t(M * N)), fast(ref.size());
    ops::reference_products().igemm(2, M, N, K, A.data(), B.data(), ref.data());
    backends::cpu::fast_products().igemm(2, M, N, K, A.data(), B.data(), fast.data());
    EXPECT_EQ(ref, fast) << "M=" << M << " N=" << N << " K=" << K << " A from " << a_lo << " B from " << b_lo;
  }
}

// Integer products are exact on both sides, so they are equal, including
// sums far past float's 2^24 (K 9000 of products up to 255 * 255).
TEST(CpuProducts, IntegerProductsAreExactlyEqual) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int32_t> u(-255, 255);
  for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {7, 9, 45}, {3, 70, 5000}, {2, 3, 9000}}) {
    std::vector<int32_t> A(size_t(M * K)), B(size_t(K * N));
    for (int32_t& v : A) v = u(rng);
    for (int32_t& v : B) v = u(rng);
    if (K == 9000) std::fill(A.begin(), A.end(), 255), std::fill(B.begin(), B.end(), 255);  // 585,225,000
    std::vector<int32_t> ref(size_t(M * N)), fast(ref.size());
    ops::reference_products().igemm(2, M, N, K, A.data(), B.data(), ref.data());
    backends::cpu::fast_products().igemm(2, M, N, K, A.data(), B.data(), fast.data());
    EXPECT_EQ(ref, fast) << "M=" << M << " N=" << N << " K=" << K;
    int64_t want = 0;
    for (int64_t k = 0; k < K; ++k) want += int64_t(A[size_t(k)]) * B[size_t(k * N)];
    EXPECT_EQ(ref[0], want) << "M=" << M << " N=" << N << " K=" << K;
  }
}

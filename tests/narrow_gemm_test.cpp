// The float GEMM's narrow paths (at most 8 columns of C: 1-D convolutions
// over short signals, Silero VAD's; at most 8 rows with B transposed: a
// recurrent step) against a double-precision reference, for every width,
// counts not multiples of the row blocks, K with and without a tail past the
// eight-wide steps, and padded leading dimensions.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ops/gemm_util.h"

using namespace kestrel;

TEST(NarrowGemm, EveryWidthAgreesWithADoubleReference) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t N = 1; N <= 9; ++N)  // 9: past the narrow path, oneDNN's
    for (int64_t M : {1, 3, 7, 258})
      for (int64_t K : {8, 13, 256, 387}) {
        const int64_t lda = K + 3, ldb = N + 2, ldc = N + 1;
        std::vector<float> A(size_t(M * lda)), B(size_t(K * ldb)), C(size_t(M * ldc), -99.f);
        for (float& v : A) v = u(rng);
        for (float& v : B) v = u(rng);
        ops::sgemm_serial(false, false, M, N, K, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(), ldc);
        double worst = 0;
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double ref = 0;
            for (int64_t k = 0; k < K; ++k) ref += double(A[size_t(m * lda + k)]) * B[size_t(k * ldb + n)];
            worst = std::max(worst, std::abs(ref - C[size_t(m * ldc + n)]));
          }
        // float32 sums of K products of values in [-1, 1]: well within 1e-4 * sqrt(K).
        EXPECT_LE(worst, 1e-4 * std::sqrt(double(K))) << "M=" << M << " N=" << N << " K=" << K;
        for (int64_t m = 0; m < M; ++m)  // the padding between rows of C is left alone
          EXPECT_EQ(C[size_t(m * ldc + N)], -99.f) << "M=" << M << " N=" << N << " K=" << K;
      }
}

// The other narrow side: few rows of A against B transposed (a recurrent
// step: one sequence's state times the weights [4H, H]).
TEST(NarrowGemm, FewRowsAgainstATransposedBAgreeWithADoubleReference) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t M = 1; M <= 9; ++M)
    for (int64_t N : {1, 5, 512})
      for (int64_t K : {8, 13, 128}) {
        const int64_t lda = M == 3 ? K + 5 : K, ldb = K + 1, ldc = N + 2;  // M == 3: A's rows gathered first
        std::vector<float> A(size_t(M * lda)), B(size_t(N * ldb)), C(size_t(M * ldc), -99.f);
        for (float& v : A) v = u(rng);
        for (float& v : B) v = u(rng);
        ops::sgemm_serial(false, true, M, N, K, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(), ldc);
        double worst = 0;
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double ref = 0;
            for (int64_t k = 0; k < K; ++k) ref += double(A[size_t(m * lda + k)]) * B[size_t(n * ldb + k)];
            worst = std::max(worst, std::abs(ref - C[size_t(m * ldc + n)]));
          }
        EXPECT_LE(worst, 1e-4 * std::sqrt(double(K))) << "M=" << M << " N=" << N << " K=" << K;
        for (int64_t m = 0; m < M; ++m) EXPECT_EQ(C[size_t(m * ldc + N)], -99.f) << "M=" << M << " N=" << N;
      }
}

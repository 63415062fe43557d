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

namespace {

// C = A op(B) through sgemm_serial (B [K, N], or [N, K] with tb) against a
// double-precision reference: float32 sums of K products of values in
// [-1, 1] stay within 1e-4 * sqrt(K); the padding between rows of C (its
// -99 fill) is left alone.
void expect_matches_reference(std::mt19937& rng, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                              int64_t ldc) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> A(size_t(M * lda)), B(size_t((tb ? N : K) * ldb)), C(size_t(M * ldc), -99.f);
  for (float& v : A) v = u(rng);
  for (float& v : B) v = u(rng);
  ops::sgemm_serial(false, tb, M, N, K, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(), ldc);
  double worst = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double ref = 0;
      for (int64_t k = 0; k < K; ++k)
        ref += double(A[size_t(m * lda + k)]) * B[size_t(tb ? n * ldb + k : k * ldb + n)];
      worst = std::max(worst, std::abs(ref - C[size_t(m * ldc + n)]));
    }
  EXPECT_LE(worst, 1e-4 * std::sqrt(double(K))) << "M=" << M << " N=" << N << " K=" << K << " tb=" << tb;
  for (int64_t m = 0; m < M; ++m)
    EXPECT_EQ(C[size_t(m * ldc + N)], -99.f) << "M=" << M << " N=" << N << " K=" << K << " tb=" << tb;
}

}  // namespace

TEST(NarrowGemm, EveryWidthAgreesWithADoubleReference) {
  std::mt19937 rng(7);
  for (int64_t N = 1; N <= 9; ++N)  // 9: past the narrow path, oneDNN's
    for (int64_t M : {1, 3, 7, 258})
      for (int64_t K : {8, 13, 256, 387}) expect_matches_reference(rng, false, M, N, K, K + 3, N + 2, N + 1);
}

// The other narrow side: few rows of A against B transposed (a recurrent
// step: one sequence's state times the weights [4H, H]).
TEST(NarrowGemm, FewRowsAgainstATransposedBAgreeWithADoubleReference) {
  std::mt19937 rng(11);
  for (int64_t M = 1; M <= 9; ++M)
    for (int64_t N : {1, 5, 512})
      for (int64_t K : {8, 13, 128})  // M == 3: A's rows have a gap, so they are gathered first
        expect_matches_reference(rng, true, M, N, K, M == 3 ? K + 5 : K, K + 1, N + 2);
}

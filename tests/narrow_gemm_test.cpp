// The float GEMM's narrow paths (at most 8 columns of C: 1-D convolutions
// over short signals, Silero VAD's; at most 8 rows with B transposed: a
// recurrent step) against a double-precision reference, for every width,
// counts not multiples of the row blocks, K with and without a tail past the
// eight-wide steps, and padded leading dimensions.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/cpu/fast_products.h"
#include "ops/gemm_util.h"
#include "backends/cpu/narrow_gemm.h"

using namespace kestrel;

namespace {

// C = A op(B) (B [K, N], or [N, K] with tb) through the narrow kernel of
// `isa` (or the fast SGEMM, for widths past it) against a double-precision reference: float32 sums of K products of values in
// [-1, 1] stay within 1e-4 * sqrt(K); the padding between rows of C (its
// -99 fill) is left alone.
void expect_matches_reference(CpuIsa isa, std::mt19937& rng, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                              int64_t ldc) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> A(size_t(M * lda)), B(size_t((tb ? N : K) * ldb)), C(size_t(M * ldc), -99.f);
  for (float& v : A) v = u(rng);
  for (float& v : B) v = u(rng);
  if (!backends::cpu::narrow_gemm(tb, M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc, isa))
    backends::cpu::fast_sgemm(false, tb, M, N, K, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(), ldc);
  double worst = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double ref = 0;
      for (int64_t k = 0; k < K; ++k)
        ref += double(A[size_t(m * lda + k)]) * B[size_t(tb ? n * ldb + k : k * ldb + n)];
      worst = std::max(worst, std::abs(ref - C[size_t(m * ldc + n)]));
    }
  EXPECT_LE(worst, 1e-4 * std::sqrt(double(K))) << "M=" << M << " N=" << N << " K=" << K << " tb=" << tb << " isa=" << int(isa);
  for (int64_t m = 0; m < M; ++m)
    EXPECT_EQ(C[size_t(m * ldc + N)], -99.f) << "M=" << M << " N=" << N << " K=" << K << " tb=" << tb << " isa=" << int(isa);
}

}  // namespace

// Both instruction sets where the CPU has them (AVX-512 runs only there).
class NarrowGemm : public ::testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (GetParam() > cpu_isa_detected()) GTEST_SKIP() << "this CPU has no " << cpu_isa_name(GetParam());
  }
};

// K: under one step, sixteen-wide steps plus an eight-wide one, with and
// without a scalar tail; M: row counts that leave partial row blocks.
TEST_P(NarrowGemm, EveryWidthAgreesWithADoubleReference) {
  std::mt19937 rng(7);
  for (int64_t N = 1; N <= 9; ++N)  // 9: past the narrow path, oneDNN's
    for (int64_t M : {1, 3, 7, 17, 258})
      for (int64_t K : {8, 13, 24, 29, 256, 387})
        expect_matches_reference(GetParam(), rng, false, M, N, K, K + 3, N + 2, N + 1);
}

// The other narrow side: few rows of A against B transposed (a recurrent
// step: one sequence's state times the weights [4H, H]).
TEST_P(NarrowGemm, FewRowsAgainstATransposedBAgreeWithADoubleReference) {
  std::mt19937 rng(11);
  for (int64_t M = 1; M <= 9; ++M)
    for (int64_t N : {1, 5, 33, 512})
      for (int64_t K : {8, 13, 29, 128})  // M == 3: A's rows have a gap, so they are gathered first
        expect_matches_reference(GetParam(), rng, true, M, N, K, M == 3 ? K + 5 : K, K + 1, N + 2);
}

#if KESTREL_X86
INSTANTIATE_TEST_SUITE_P(Isa, NarrowGemm, ::testing::Values(CpuIsa::Avx2, CpuIsa::Avx512),
                         [](const auto& info) { return std::string(cpu_isa_name(info.param)); });
#else
// arm64: the NEON kernel, which every AArch64 CPU runs (x86's levels do not
// apply; the baseline is all the CPU reports).
INSTANTIATE_TEST_SUITE_P(Neon, NarrowGemm, ::testing::Values(CpuIsa::Baseline),
                         [](const auto&) { return std::string("neon"); });
#endif

// im2row (a convolution's windows as rows, for the narrow product) is
// im2col transposed, for 1-D and 2-D windows with stride, dilation and
// padding on both sides, over position ranges that start past 0.
TEST(Im2row, IsTheTransposeOfIm2col) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  struct Case { std::vector<int64_t> in, kernel, stride, dil, pad_begin, pad_end; };
  const Case cases[] = {
      {{640}, {256}, {128}, {1}, {0}, {0}},          // Silero's STFT convolution
      {{4}, {3}, {1}, {1}, {1}, {1}},                // its encoder's first layer
      {{9}, {3}, {2}, {2}, {2}, {1}},
      {{5, 4}, {3, 2}, {2, 1}, {1, 2}, {1, 0}, {1, 2}},
      {{3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
  };
  for (const Case& c : cases) {
    ops::WindowGeom g;
    g.nd = int(c.in.size());
    g.in = c.in, g.kernel = c.kernel, g.stride = c.stride, g.dil = c.dil;
    g.pad_begin = c.pad_begin, g.pad_end = c.pad_end;
    for (int d = 0; d < g.nd; ++d)
      g.out.push_back((g.in[d] + g.pad_begin[d] + g.pad_end[d] - g.dil[d] * (g.kernel[d] - 1) - 1) / g.stride[d] + 1);
    const int64_t channels = 3, K = channels * g.kernel_size(), OS = g.out_size();
    std::vector<float> x(size_t(channels * g.in_size()));
    for (float& v : x) v = u(rng);
    const int64_t o0 = OS > 2 ? 1 : 0, n = OS - o0;
    std::vector<float> col(size_t(K * n)), rows(size_t(K * n), -99.f);
    ops::im2col(g, x.data(), channels, o0, OS, col.data());
    ops::im2row(g, x.data(), channels, o0, OS, rows.data());
    for (int64_t p = 0; p < n; ++p)
      for (int64_t k = 0; k < K; ++k)
        ASSERT_EQ(rows[size_t(p * K + k)], col[size_t(k * n + p)]) << "nd=" << g.nd << " position " << o0 + p << " k=" << k;
  }
}

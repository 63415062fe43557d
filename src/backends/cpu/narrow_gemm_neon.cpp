// The narrow-product kernel on arm64's NEON (every AArch64 CPU has it):
// the same product as narrow_kernel.inc's x86 builds (R rows of the wide
// operand meet the narrow operand's N vectors, contiguous in K, in R * N
// accumulators) on four-float registers. AArch64 has 32 of them: up to 16
// accumulators, the R row loads and one of the narrow side's, where AVX2's
// 16 hold 8. Each sum folds across its lanes with one addv.
#include <arm_neon.h>

#include <cstdint>

#include "backends/cpu/narrow_gemm.h"

namespace kestrel::backends::cpu::narrow_neon {
namespace {

template <int N, int R>
void narrow_rows(int64_t first, int64_t rows, int64_t K, const float* x, int64_t ldx, const float* v, float* C,
                 int64_t c_row, int64_t c_col) {
  for (int64_t m = first; m + R <= rows; m += R) {
    const float* a[R];
    for (int r = 0; r < R; ++r) a[r] = x + (m + r) * ldx;
    float32x4_t acc[R][N];
    for (int r = 0; r < R; ++r)
      for (int n = 0; n < N; ++n) acc[r][n] = vdupq_n_f32(0.f);
    int64_t k = 0;
    for (; k + 4 <= K; k += 4) {
      float32x4_t rows_k[R];
      for (int r = 0; r < R; ++r) rows_k[r] = vld1q_f32(a[r] + k);
      for (int n = 0; n < N; ++n) {
        const float32x4_t b = vld1q_f32(v + n * K + k);
        for (int r = 0; r < R; ++r) acc[r][n] = vfmaq_f32(acc[r][n], rows_k[r], b);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int n = 0; n < N; ++n) {
        float sum = vaddvq_f32(acc[r][n]);
        for (int64_t kk = k; kk < K; ++kk) sum += a[r][kk] * v[n * K + kk];
        C[(m + r) * c_row + n * c_col] = sum;
      }
  }
  if constexpr (R > 1) narrow_rows<N, 1>(rows - rows % R, rows, K, x, ldx, v, C, c_row, c_col);
}

// Rows per block: R * N accumulators, at most 16, plus R row registers.
constexpr int block_rows(int n) { return n == 1 ? 8 : n == 2 ? 6 : n <= 4 ? 3 : 2; }

template <int N>
void narrow_n(int64_t rows, int64_t K, const float* x, int64_t ldx, const float* v, float* C, int64_t c_row,
              int64_t c_col) {
  narrow_rows<N, block_rows(N)>(0, rows, K, x, ldx, v, C, c_row, c_col);
}

}  // namespace

void narrow(int64_t n, int64_t rows, int64_t K, const float* x, int64_t ldx, const float* v, float* C, int64_t c_row,
            int64_t c_col) {
  switch (n) {
    case 1: narrow_n<1>(rows, K, x, ldx, v, C, c_row, c_col); break;
    case 2: narrow_n<2>(rows, K, x, ldx, v, C, c_row, c_col); break;
    case 3: narrow_n<3>(rows, K, x, ldx, v, C, c_row, c_col); break;
    case 4: narrow_n<4>(rows, K, x, ldx, v, C, c_row, c_col); break;
    case 5: narrow_n<5>(rows, K, x, ldx, v, C, c_row, c_col); break;
    case 6: narrow_n<6>(rows, K, x, ldx, v, C, c_row, c_col); break;
    case 7: narrow_n<7>(rows, K, x, ldx, v, C, c_row, c_col); break;
    default: narrow_n<8>(rows, K, x, ldx, v, C, c_row, c_col); break;
  }
}

}  // namespace kestrel::backends::cpu::narrow_neon

#include "backends/cpu/igemm_exact.h"

#include <cmath>

#include "backends/cpu/fast_products.h"

namespace kestrel::backends::cpu {

SplitOperand split_operand(const int32_t* a, int64_t rows, int64_t cols) {
  SplitOperand s;
  s.rows = rows;
  s.cols = cols;
  size_t n = size_t(rows * cols);
  s.hi.resize(n);
  s.lo.resize(n);
  for (size_t i = 0; i < n; ++i) {
    int32_t v = a[i];
    s.hi[i] = float(v >> 4);  // arithmetic shift: floor(v / 16)
    s.lo[i] = float(v & 15);  // v - 16 * floor(v / 16), in [0, 15]
  }
  return s;
}

void igemm_exact_serial(const SplitOperand& a, int64_t m0, int64_t M, int64_t N, const float* B, int64_t ldb,
                        int32_t* C, int64_t ldc) {
  const int64_t K = a.cols;
  static thread_local std::vector<float> hi, lo;
  hi.resize(size_t(M * N));
  lo.resize(size_t(M * N));
  for (int64_t i = 0; i < M; ++i) std::fill_n(C + i * ldc, N, 0);
  for (int64_t k0 = 0; k0 < K; k0 += kExactKBlock) {
    int64_t kb = std::min(kExactKBlock, K - k0);
    const float* ah = a.hi.data() + m0 * K + k0;
    const float* al = a.lo.data() + m0 * K + k0;
    fast_sgemm(false, false, M, N, kb, 1.f, ah, K, B + k0 * ldb, ldb, 0.f, hi.data(), N);
    fast_sgemm(false, false, M, N, kb, 1.f, al, K, B + k0 * ldb, ldb, 0.f, lo.data(), N);
    for (int64_t i = 0; i < M; ++i) {
      int32_t* c = C + i * ldc;
      const float* h = hi.data() + i * N;
      const float* l = lo.data() + i * N;
      for (int64_t j = 0; j < N; ++j) c[j] += 16 * int32_t(h[j]) + int32_t(l[j]);
    }
  }
}

}  // namespace kestrel::backends::cpu

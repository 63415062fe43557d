// The narrow-product kernel on AVX2 + FMA (every x86-64-v3 CPU).
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/narrow_gemm.h"

namespace kestrel::backends::cpu::narrow_avx2 {
using Vec = __m256;
constexpr int kWidth = 8;
constexpr int kRowScale = 1;
inline Vec vzero() { return _mm256_setzero_ps(); }
inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline __m256 fold(Vec v) { return v; }
#include "backends/cpu/narrow_kernel.inc"
}  // namespace kestrel::backends::cpu::narrow_avx2

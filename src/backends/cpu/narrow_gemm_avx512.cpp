// The narrow-product kernel on AVX-512F (built with -mavx512f, run only where
// the CPU has it): twice the FMA width and registers for twice the rows.
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/narrow_gemm.h"

namespace kestrel::backends::cpu::narrow_avx512 {
using Vec = __m512;
constexpr int kWidth = 16;
constexpr int kRowScale = 2;
inline Vec vzero() { return _mm512_setzero_ps(); }
inline Vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline __m256 fold(Vec v) {
  // (lanes 8-15 moved down by a shuffle: GCC 12 warns on the extract intrinsics)
  return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_castps512_ps256(_mm512_shuffle_f32x4(v, v, 0xEE)));
}
#include "backends/cpu/narrow_kernel.inc"
}  // namespace kestrel::backends::cpu::narrow_avx512

// The channels-last depthwise convolution's tiles on AVX2 + FMA
// (nhwc_depthwise.h): 8 channels a vector, 8 positions a tile (8 of the 16
// registers for the sums).
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/each_index.h"
#include "backends/cpu/nhwc_depthwise.h"

namespace kestrel::backends::cpu::nhwc_depthwise_avx2 {
using Vec = __m256;
using Mask = __m256i;
constexpr int kWidth = 8;
constexpr int kTile = 8;
inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec vset1(float f) { return _mm256_set1_ps(f); }
inline Vec vmax(Vec a, Vec b) { return _mm256_max_ps(a, b); }
inline Vec vmin(Vec a, Vec b) { return _mm256_min_ps(a, b); }
inline Mask lanes(int n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
inline Vec vload_masked(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
inline void vstore_masked(float* p, Mask m, Vec v) { _mm256_maskstore_ps(p, m, v); }
#include "backends/cpu/nhwc_depthwise_kernel.inc"
}  // namespace kestrel::backends::cpu::nhwc_depthwise_avx2

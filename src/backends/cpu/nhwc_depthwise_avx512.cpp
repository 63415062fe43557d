// The channels-last depthwise convolution's tiles on AVX-512F
// (nhwc_depthwise.h): 16 channels a vector, 8 positions a tile; a last
// block of fewer channels through AVX-512's masked loads and stores.
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/each_index.h"
#include "backends/cpu/nhwc_depthwise.h"

namespace kestrel::backends::cpu::nhwc_depthwise_avx512 {
using Vec = __m512;
using Mask = __mmask16;
constexpr int kWidth = 16;
constexpr int kTile = 8;
inline Vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec vset1(float f) { return _mm512_set1_ps(f); }
inline Vec vmax(Vec a, Vec b) { return _mm512_max_ps(a, b); }
inline Vec vmin(Vec a, Vec b) { return _mm512_min_ps(a, b); }
inline Mask lanes(int n) { return n >= 16 ? Mask(0xFFFF) : Mask((1u << n) - 1); }
inline Vec vload_masked(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
inline void vstore_masked(float* p, Mask m, Vec v) { _mm512_mask_storeu_ps(p, m, v); }
#include "backends/cpu/nhwc_depthwise_kernel.inc"
}  // namespace kestrel::backends::cpu::nhwc_depthwise_avx512

// The channels-last direct convolution's tile on AVX2 + FMA (nhwc_conv.h):
// 6 positions x 16 channels in 12 of the 16 registers, 2 for the weights,
// 1 for the broadcast input; for a last block of 8 channels or fewer, 12
// positions x 8 channels.
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/each_index.h"
#include "backends/cpu/nhwc_conv.h"

namespace kestrel::backends::cpu::nhwc_conv_avx2 {
using Vec = __m256;
constexpr int kWidth = 8;
constexpr int kPositions = 6;
constexpr int kNarrowPositions = 12;
inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vsplat(const float* p) { return _mm256_broadcast_ss(p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
#include "backends/cpu/nhwc_conv_kernel.inc"
}  // namespace kestrel::backends::cpu::nhwc_conv_avx2

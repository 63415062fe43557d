// The direct convolution's tile on AVX2 + FMA (every x86-64-v3 CPU): 4
// channels x 24 positions in 12 of the 16 registers.
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/direct_conv.h"
#include "backends/cpu/each_index.h"

namespace kestrel::backends::cpu::direct_conv_avx2 {
using Vec = __m256;
constexpr int kWidth = 8;
constexpr int kRows = 4;
constexpr int kVecs = 3;
inline Vec vzero() { return _mm256_setzero_ps(); }
inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vsplat(const float* p) { return _mm256_broadcast_ss(p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
#include "backends/cpu/direct_conv_kernel.inc"
}  // namespace kestrel::backends::cpu::direct_conv_avx2

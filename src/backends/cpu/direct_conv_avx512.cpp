// The direct convolution's tile on AVX-512F (built with -mavx512f, run only
// where the CPU has it): 8 channels x 48 positions in 24 accumulators.
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/direct_conv.h"
#include "backends/cpu/each_index.h"

namespace kestrel::backends::cpu::direct_conv_avx512 {
using Vec = __m512;
constexpr int kWidth = 16;
constexpr int kRows = 8;
constexpr int kVecs = 3;
inline Vec vzero() { return _mm512_setzero_ps(); }
inline Vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline Vec vsplat(const float* p) { return _mm512_set1_ps(*p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
#include "backends/cpu/direct_conv_kernel.inc"
}  // namespace kestrel::backends::cpu::direct_conv_avx512

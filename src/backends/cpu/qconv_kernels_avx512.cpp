// QLinearConv's u8 x s8 product on AVX-512 VNNI (qconv_kernels.h):
// vpdpbusd adds four u8 x s8 products into each int32 lane without
// saturating, so every sum is exact. A block of 8 rows of S by 32 columns of
// U keeps 16 accumulators in registers; per four k, two 64-byte loads of U
// and eight broadcasts of four S bytes.
#include <immintrin.h>

#include "backends/cpu/qconv_kernels.h"

namespace kestrel::backends::cpu::qconv_avx512 {
namespace {

// Rows m0 .. m0 + 7 by columns n0 .. n0 + 31 (the columns past N masked).
inline void block(int64_t N, int64_t K4, const uint8_t* U, const int8_t* S, int64_t m0, int64_t n0, int32_t* C,
                  int64_t ldc) {
  const int64_t left = N - n0;
  const __mmask16 k0 = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
  const __mmask16 k1 = left >= 32 ? __mmask16(0xFFFF) : left <= 16 ? __mmask16(0) : __mmask16((1u << (left - 16)) - 1);
  __m512i acc[8][2];
  for (int r = 0; r < 8; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
  const int64_t srow = K4 * 4;
  for (int64_t k = 0; k < K4; ++k) {
    const int32_t* u = reinterpret_cast<const int32_t*>(U + (k * N + n0) * 4);
    const __m512i a0 = _mm512_maskz_loadu_epi32(k0, u);
    const __m512i a1 = _mm512_maskz_loadu_epi32(k1, u + 16);
    const int8_t* s = S + m0 * srow + k * 4;
    for (int r = 0; r < 8; ++r) {
      int32_t quad;
      __builtin_memcpy(&quad, s + r * srow, 4);
      const __m512i b = _mm512_set1_epi32(quad);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], a0, b);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], a1, b);
    }
  }
  for (int r = 0; r < 8; ++r) {
    int32_t* c = C + (m0 + r) * ldc + n0;
    _mm512_mask_storeu_epi32(c, k0, acc[r][0]);
    _mm512_mask_storeu_epi32(c + 16, k1, acc[r][1]);
  }
}

}  // namespace

void igemm_u8s8_packed(int64_t M8, int64_t N, int64_t K4, const uint8_t* U, const int8_t* S, int32_t* C,
                       int64_t ldc) {
  for (int64_t n0 = 0; n0 < N; n0 += 32)
    for (int64_t m0 = 0; m0 < M8; m0 += 8) block(N, K4, U, S, m0, n0, C, ldc);
}

}  // namespace kestrel::backends::cpu::qconv_avx512

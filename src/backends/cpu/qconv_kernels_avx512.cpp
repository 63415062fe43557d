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
// The 16 accumulators are named one by one: held in an array, GCC 12 kept a
// copy of each on the stack and moved it through one register per product
// (measured: three moves per vpdpbusd).
inline void block(int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int8_t* S, int64_t m0, int64_t n0,
                  int32_t* C, int64_t ldc) {
  const int64_t left = N - n0;
  const __mmask16 k0 = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
  const __mmask16 k1 = left >= 32 ? __mmask16(0xFFFF) : left <= 16 ? __mmask16(0) : __mmask16((1u << (left - 16)) - 1);
  const int64_t srow = K4 * 4;
  const int8_t* s = S + m0 * srow;
#define KESTREL_ROW(r) __m512i c##r##a = _mm512_setzero_si512(), c##r##b = _mm512_setzero_si512();
  KESTREL_ROW(0) KESTREL_ROW(1) KESTREL_ROW(2) KESTREL_ROW(3) KESTREL_ROW(4) KESTREL_ROW(5) KESTREL_ROW(6) KESTREL_ROW(7)
#undef KESTREL_ROW
  for (int64_t k = 0; k < K4; ++k) {
    const int32_t* u = reinterpret_cast<const int32_t*>(U + (k * ldu + n0) * 4);
    const __m512i a0 = _mm512_maskz_loadu_epi32(k0, u);
    const __m512i a1 = _mm512_maskz_loadu_epi32(k1, u + 16);
    const int8_t* sk = s + k * 4;
#define KESTREL_ROW(r)                                                                      \
  {                                                                                         \
    int32_t quad;                                                                           \
    __builtin_memcpy(&quad, sk + (r) * srow, 4);                                            \
    const __m512i b = _mm512_set1_epi32(quad);                                              \
    c##r##a = _mm512_dpbusd_epi32(c##r##a, a0, b);                                          \
    c##r##b = _mm512_dpbusd_epi32(c##r##b, a1, b);                                          \
  }
    KESTREL_ROW(0) KESTREL_ROW(1) KESTREL_ROW(2) KESTREL_ROW(3) KESTREL_ROW(4) KESTREL_ROW(5) KESTREL_ROW(6) KESTREL_ROW(7)
#undef KESTREL_ROW
  }
#define KESTREL_ROW(r)                                        \
  _mm512_mask_storeu_epi32(C + (m0 + (r)) * ldc + n0, k0, c##r##a); \
  _mm512_mask_storeu_epi32(C + (m0 + (r)) * ldc + n0 + 16, k1, c##r##b);
  KESTREL_ROW(0) KESTREL_ROW(1) KESTREL_ROW(2) KESTREL_ROW(3) KESTREL_ROW(4) KESTREL_ROW(5) KESTREL_ROW(6) KESTREL_ROW(7)
#undef KESTREL_ROW
}

}  // namespace

void igemm_u8s8_packed(int64_t M8, int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int8_t* S, int32_t* C,
                       int64_t ldc) {
  for (int64_t n0 = 0; n0 < N; n0 += 32)
    for (int64_t m0 = 0; m0 < M8; m0 += 8) block(N, K4, U, ldu, S, m0, n0, C, ldc);
}

}  // namespace kestrel::backends::cpu::qconv_avx512

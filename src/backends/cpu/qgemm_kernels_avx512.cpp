// QLinearMatMul's and MatMulInteger's u8 x s8 product on AVX-512 VNNI
// (qgemm_kernels.h): vpdpbusd adds four u8 x s8 products into each int32
// lane without saturating, so every sum is exact. A block of 6 rows of A by
// up to 4 panels (64 columns) keeps 24 accumulators in registers; per four
// k, up to four 64-byte loads of the panels and six broadcasts of four bytes
// of A. The epilogue works on the accumulators as they are, so no int32
// matrix of the output's size is written.
#include <immintrin.h>

#include "backends/cpu/qgemm_kernels.h"

namespace kestrel::backends::cpu {
namespace qgemm_avx512 {
namespace {

constexpr int kRows = 6;

inline __mmask16 columns_mask(int64_t n, int64_t n1) {
  const int64_t left = n1 - n;
  return left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
}

// Sixteen sums of one row into the output (QGemmEpilogue says how).
inline void finish(__m512i v, int64_t m, int64_t n, __mmask16 k, const QGemmEpilogue& e) {
  v = _mm512_add_epi32(v, _mm512_maskz_loadu_epi32(k, e.col_add + n));
  if (e.row_scale)
    v = _mm512_add_epi32(v, _mm512_mullo_epi32(_mm512_set1_epi32(e.row_sums[m]),
                                               _mm512_maskz_loadu_epi32(k, e.row_scale + n)));
  if (e.y32) return _mm512_mask_storeu_epi32(e.y32 + m * e.ldy + n, k, v);
  const __m512 mult = e.mult_per_column ? _mm512_maskz_loadu_ps(k, e.mult + n) : _mm512_set1_ps(e.mult[0]);
  if (e.yf) {
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), mult);
    if (e.bias) f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(k, e.bias + n));
    return _mm512_mask_storeu_ps(e.yf + m * e.ldy + n, k, f);
  }
  // requantize<Q>(): float(v) * mult, clamped to +-2^22 (beyond, every
  // result saturates anyway; the clamp keeps the conversion in range),
  // rounded half to even (the default mode, as nearbyint), plus the zero
  // point, saturated to the type.
  const __m512 big = _mm512_set1_ps(4194304.f);
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), mult);
  f = _mm512_min_ps(_mm512_max_ps(f, _mm512_sub_ps(_mm512_setzero_ps(), big)), big);
  const __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(e.zero_point));
  if (e.y_signed) {
    _mm_mask_storeu_epi8(static_cast<int8_t*>(e.y8) + m * e.ldy + n, k, _mm512_cvtsepi32_epi8(r));
  } else {  // (the unsigned narrowing reads its input as unsigned: negatives go to 0 first)
    const __m128i q = _mm512_cvtusepi32_epi8(_mm512_max_epi32(r, _mm512_setzero_si512()));
    _mm_mask_storeu_epi8(static_cast<uint8_t*>(e.y8) + m * e.ldy + n, k, q);
  }
}

// Rows m0 .. m0 + rows - 1 (rows <= 6; the missing ones repeat the last
// row, their sums unused) by NP panels from column n0.
template <int NP>
inline void block(int64_t m0, int64_t rows, int64_t n0, int64_t n1, int64_t K4, const uint8_t* A, int64_t lda,
                  const int8_t* P, const QGemmEpilogue& e) {
  const int64_t panel_bytes = K4 * 64;
  const uint8_t* a[kRows];
  for (int r = 0; r < kRows; ++r) a[r] = A + (m0 + (r < rows ? r : rows - 1)) * lda;
  __m512i c[kRows][NP];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) c[r][p] = _mm512_setzero_si512();
  for (int64_t k = 0; k < K4; ++k) {
    __m512i b[NP];
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) b[p] = _mm512_loadu_si512(P + p * panel_bytes + k * 64);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      int32_t quad;
      __builtin_memcpy(&quad, a[r] + k * 4, 4);
      const __m512i q = _mm512_set1_epi32(quad);
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) c[r][p] = _mm512_dpbusd_epi32(c[r][p], q, b[p]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows) break;
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      const int64_t n = n0 + p * kPanelColumns;
      finish(c[r][p], m0 + r, n, columns_mask(n, n1), e);
    }
  }
}

}  // namespace

void qgemm_u8s8(int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K4, const uint8_t* A, int64_t lda,
                const int8_t* P, const QGemmEpilogue& e) {
  const int64_t panel_bytes = K4 * 64;
  for (int64_t n = n0; n < n1; n += 4 * kPanelColumns) {
    const int64_t width = n1 - n < 4 * kPanelColumns ? n1 - n : 4 * kPanelColumns;
    const int64_t panels = (width + kPanelColumns - 1) / kPanelColumns;
    const int8_t* p = P + (n / kPanelColumns) * panel_bytes;
    for (int64_t m = m0; m < m1; m += kRows) {
      const int64_t rows = m1 - m < kRows ? m1 - m : kRows;
      switch (panels) {
        case 4: block<4>(m, rows, n, n1, K4, A, lda, p, e); break;
        case 3: block<3>(m, rows, n, n1, K4, A, lda, p, e); break;
        case 2: block<2>(m, rows, n, n1, K4, A, lda, p, e); break;
        default: block<1>(m, rows, n, n1, K4, A, lda, p, e); break;
      }
    }
  }
}

}  // namespace qgemm_avx512
}  // namespace kestrel::backends::cpu

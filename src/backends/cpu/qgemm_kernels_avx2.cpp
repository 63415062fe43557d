// The quantized MatMuls' u8 x s8 product on AVX2 (qgemm_kernels.h), for
// CPUs without AVX-512 VNNI. vpmaddubsw would multiply the bytes as they
// are but saturates its pair sums to int16 (255 * 127 * 2 > 32767), so the
// bytes are widened to int16 first and vpmaddwd adds each pair of int16
// products into an int32 lane, exactly. The panels' four k of a column sit
// together, so a lane holds half of a column's quad (k0 k1, or k2 k3); the
// halves are added once at the end. A block of 4 rows of A by 8 columns
// keeps 8 accumulators; per four k, two sign-extending loads of the panel
// and four broadcasts of a row's four widened values.
#include <immintrin.h>

#include "backends/cpu/qgemm_kernels.h"

namespace kestrel::backends::cpu {
namespace qgemm_avx2 {
namespace {

constexpr int kRows = 4;

// The lanes of the first `count` of 8 columns.
inline __m256i columns_mask(int64_t count) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(count)), lanes);
}

// Eight sums of one row (columns n .. n + 7, the first `count` real) into
// the output (QGemmEpilogue says how).
inline void finish(__m256i v, int64_t m, int64_t n, int64_t count, const QGemmEpilogue& e) {
  const __m256i k = columns_mask(count);
  v = _mm256_add_epi32(v, _mm256_maskload_epi32(e.col_add + n, k));
  if (e.row_scale)
    v = _mm256_add_epi32(v, _mm256_mullo_epi32(_mm256_set1_epi32(e.row_sums[m]), _mm256_maskload_epi32(e.row_scale + n, k)));
  if (e.y32) return _mm256_maskstore_epi32(e.y32 + m * e.ldy + n, k, v);
  const __m256 mult = e.mult_per_column ? _mm256_maskload_ps(e.mult + n, k) : _mm256_set1_ps(e.mult[0]);
  if (e.yf) {
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), mult);
    if (e.bias) f = _mm256_add_ps(f, _mm256_maskload_ps(e.bias + n, k));
    return _mm256_maskstore_ps(e.yf + m * e.ldy + n, k, f);
  }
  // requantize<Q>(), as qconv_kernels_avx2.cpp's requantize8: float(v) *
  // mult clamped to +-2^22, rounded half to even, plus the zero point,
  // narrowed with saturation.
  const __m256 big = _mm256_set1_ps(4194304.f);
  __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), mult);
  f = _mm256_min_ps(_mm256_max_ps(f, _mm256_sub_ps(_mm256_setzero_ps(), big)), big);
  const __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(f), _mm256_set1_epi32(e.zero_point));
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  const __m128i q = e.y_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
  unsigned char* out = static_cast<unsigned char*>(e.y8) + m * e.ldy + n;
  if (count == 8) return _mm_storel_epi64(reinterpret_cast<__m128i*>(out), q);
  alignas(16) unsigned char bytes[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(bytes), q);
  for (int64_t j = 0; j < count; ++j) out[j] = bytes[j];
}

// Rows m0 .. m0 + rows - 1 (rows <= 4; the missing ones repeat the last
// row, their sums unused) by the 8 columns of half `half` of the panel at P.
inline void block(int64_t m0, int64_t rows, int64_t n, int64_t count, int64_t K4, const int16_t* A16, int64_t lda,
                  const int8_t* P, const QGemmEpilogue& e) {
  const int16_t* a[kRows];
  for (int r = 0; r < kRows; ++r) a[r] = A16 + (m0 + (r < rows ? r : rows - 1)) * lda;
  __m256i lo[kRows], hi[kRows];  // columns 0-3 and 4-7, each lane half of a quad
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) lo[r] = hi[r] = _mm256_setzero_si256();
  for (int64_t k = 0; k < K4; ++k) {
    const __m128i* b = reinterpret_cast<const __m128i*>(P + k * 64);
    const __m256i b_lo = _mm256_cvtepi8_epi16(_mm_loadu_si128(b));
    const __m256i b_hi = _mm256_cvtepi8_epi16(_mm_loadu_si128(b + 1));
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      long long quad;
      __builtin_memcpy(&quad, a[r] + k * 4, 8);
      const __m256i q = _mm256_set1_epi64x(quad);
      lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(b_lo, q));
      hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(b_hi, q));
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows) break;
    // Pair sums [c0 c1 c4 c5 | c2 c3 c6 c7], then the 64-bit quarters in order.
    const __m256i sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo[r], hi[r]), 0xD8);
    finish(sums, m0 + r, n, count, e);
  }
}

}  // namespace

void qgemm_u8s8(int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K4, const int16_t* A16, int64_t lda,
                const int8_t* P, const QGemmEpilogue& e) {
  const int64_t panel_bytes = K4 * 64;
  for (int64_t n = n0; n < n1; n += 8) {
    const int8_t* p = P + (n / kPanelColumns) * panel_bytes + (n % kPanelColumns) / 8 * 32;
    const int64_t count = n1 - n < 8 ? n1 - n : 8;
    for (int64_t m = m0; m < m1; m += kRows) block(m, m1 - m < kRows ? m1 - m : kRows, n, count, K4, A16, lda, p, e);
  }
}

}  // namespace qgemm_avx2
}  // namespace kestrel::backends::cpu

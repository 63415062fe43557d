// nbits4_rows' whole groups of 16 weights on AVX2 + FMA: 8 bytes widened to
// 8 lanes, their low and high nibbles (k even and odd) converted to float
// and multiplied into A's rows reordered to match (NbitsRows::pairs); each
// block's sum scaled once and its zero point taken off through the row's
// sum over the block (nbits_rows.h). (Intrinsics alone, no function from a
// header, so no out-of-line copy compiled for AVX2 is shared with baseline
// code.)
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/nbits_rows.h"

namespace kestrel::backends::cpu::nbits_avx2 {

namespace {

// M a constant, so the accumulators stay in registers (with M a variable
// the compiler kept them on the stack, each FMA waiting on the last's store).
template <int M>
void rows_of(int64_t K, int64_t block, const float* pairs, const float* sums, const uint8_t* b, const float* scales,
             const uint8_t* zp, int64_t n, float* out) {
  const int64_t blocks = (K + block - 1) / block;
  const __m256i low4 = _mm256_set1_epi32(15);
  __m256 acc[M];
  for (auto& v : acc) v = _mm256_setzero_ps();
  float corr[M] = {};
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t k0 = blk * block, live = K - k0 < block ? K - k0 : block, whole = live / 16 * 16;
    if (whole == 0) continue;
    const uint8_t* q = b + (n * blocks + blk) * (block / 2);
    __m256 dot[M], dot_hi[M];  // (two chains of FMAs, the low and the high nibbles')
    for (int m = 0; m < M; ++m) dot[m] = dot_hi[m] = _mm256_setzero_ps();
    for (int64_t j = 0; j < whole; j += 16) {
      int64_t bytes;
      std::memcpy(&bytes, q + j / 2, 8);
      const __m256i v = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bytes));
      const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(v, low4));
      const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
      for (int m = 0; m < M; ++m) {
        const float* a = pairs + m * K + k0 + j;
        dot[m] = _mm256_fmadd_ps(_mm256_loadu_ps(a), lo, dot[m]);
        dot_hi[m] = _mm256_fmadd_ps(_mm256_loadu_ps(a + 8), hi, dot_hi[m]);
      }
    }
    const int32_t z = zp ? (zp[n * ((blocks + 1) / 2) + blk / 2] >> (4 * (blk % 2))) & 15 : 8;
    const float s = scales[n * blocks + blk];
    const __m256 sv = _mm256_set1_ps(s);
    for (int m = 0; m < M; ++m) {
      acc[m] = _mm256_fmadd_ps(sv, _mm256_add_ps(dot[m], dot_hi[m]), acc[m]);
      corr[m] += s * float(z) * sums[m * blocks + blk];
    }
  }
  for (int m = 0; m < M; ++m) {
    const __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc[m]), _mm256_extractf128_ps(acc[m], 1));
    const __m128 p = _mm_add_ps(h, _mm_movehl_ps(h, h));
    out[m] += _mm_cvtss_f32(_mm_add_ss(p, _mm_shuffle_ps(p, p, 1))) - corr[m];
  }
}

}  // namespace

void rows(int64_t M, int64_t K, int64_t block, const float* pairs, const float* sums, const uint8_t* b,
          const float* scales, const uint8_t* zp, int64_t n, float* out) {
  switch (M) {
    case 1: return rows_of<1>(K, block, pairs, sums, b, scales, zp, n, out);
    case 2: return rows_of<2>(K, block, pairs, sums, b, scales, zp, n, out);
    case 3: return rows_of<3>(K, block, pairs, sums, b, scales, zp, n, out);
    default: return rows_of<4>(K, block, pairs, sums, b, scales, zp, n, out);
  }
}

}  // namespace kestrel::backends::cpu::nbits_avx2

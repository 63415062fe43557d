// nbits4_panel's 8 columns at a time on AVX2: for each group of 16
// weights along k, the 8 columns' 8 bytes are transposed (three rounds of
// byte, word and dword interleaves) so each byte position holds one byte of
// every column; widened to 8 lanes, its low and high nibbles are the rows k
// and k + 1 of the panel, each (q - zero point) * scale as the reference
// computes it (ops/matmul_nbits.h: the same floats), stored as one 32-byte
// row. (Intrinsics alone, no function from
// a header, so no out-of-line copy compiled for AVX2 is shared with
// baseline code.)
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/nbits_panel.h"

namespace kestrel::backends::cpu::nbits_avx2 {

void panel8(const Nbits4Weights& w, int64_t n0, float* panel, int64_t ldp) {
  const int64_t blocks = (w.K + w.block - 1) / w.block, half = w.block / 2;
  const __m256i low4 = _mm256_set1_epi32(15);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t k0 = blk * w.block, live = w.K - k0 < w.block ? w.K - k0 : w.block, whole = live / 16 * 16;
    if (whole == 0) continue;
    // (The 8 columns' scales and zero points put together in registers:
    // stored to memory and loaded as a vector, the load waited on the
    // stores' forwarding, a quarter of the kernel's time.)
    auto zero = [&](int c) -> int32_t {
      const int64_t n = n0 + c;
      return w.zp ? (w.zp[n * ((blocks + 1) / 2) + blk / 2] >> (4 * (blk % 2))) & 15 : 8;
    };
    auto scale = [&](int c) { return w.scales[(n0 + c) * blocks + blk]; };
    const __m256 sv = _mm256_setr_ps(scale(0), scale(1), scale(2), scale(3), scale(4), scale(5), scale(6), scale(7));
    const __m256i zv = _mm256_setr_epi32(zero(0), zero(1), zero(2), zero(3), zero(4), zero(5), zero(6), zero(7));
    for (int64_t j = 0; j < whole; j += 16) {
      __m128i col[8];
      for (int c = 0; c < 8; ++c) {
        int64_t bytes;
        std::memcpy(&bytes, w.b + ((n0 + c) * blocks + blk) * half + j / 2, 8);
        col[c] = _mm_cvtsi64_si128(bytes);
      }
      // Bytes i of columns (0,1), (2,3), ... side by side; then of 4
      // columns; then of all 8: t[p] holds byte positions 2p and 2p + 1.
      const __m128i p01 = _mm_unpacklo_epi8(col[0], col[1]), p23 = _mm_unpacklo_epi8(col[2], col[3]);
      const __m128i p45 = _mm_unpacklo_epi8(col[4], col[5]), p67 = _mm_unpacklo_epi8(col[6], col[7]);
      const __m128i q0 = _mm_unpacklo_epi16(p01, p23), q1 = _mm_unpackhi_epi16(p01, p23);
      const __m128i q2 = _mm_unpacklo_epi16(p45, p67), q3 = _mm_unpackhi_epi16(p45, p67);
      const __m128i t[4] = {_mm_unpacklo_epi32(q0, q2), _mm_unpackhi_epi32(q0, q2), _mm_unpacklo_epi32(q1, q3),
                            _mm_unpackhi_epi32(q1, q3)};
      for (int i = 0; i < 8; ++i) {
        const __m128i bytes = i % 2 ? _mm_unpackhi_epi64(t[i / 2], t[i / 2]) : t[i / 2];
        const __m256i v = _mm256_cvtepu8_epi32(bytes);
        const __m256 lo = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(v, low4), zv));
        const __m256 hi = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(v, 4), zv));
        float* row = panel + (k0 + j + 2 * i) * ldp;
        _mm256_storeu_ps(row, _mm256_mul_ps(lo, sv));
        _mm256_storeu_ps(row + ldp, _mm256_mul_ps(hi, sv));
      }
    }
  }
}

}  // namespace kestrel::backends::cpu::nbits_avx2

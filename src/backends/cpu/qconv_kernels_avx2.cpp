// QLinearConv's loops around its product on AVX2, and the product itself
// for CPUs without AVX-512 VNNI (qconv_kernels.h).
#include <immintrin.h>

#include <type_traits>

#include "backends/cpu/qconv_kernels.h"

namespace kestrel::backends::cpu::qconv_avx2 {
namespace {

// requantize<Q>() (ops/requantize.h), eight sums at a time: float(acc +
// bias) * mult, clamped to +-2^22 (beyond, every result saturates anyway;
// the clamp keeps the conversion from overflowing), converted rounding half
// to even (the default rounding mode, as nearbyint), plus the zero point,
// then narrowed with saturation to the 8-bit range. Written with intrinsics:
// GCC's vectorization of the plain loop (a magic-number rounding and
// element-wise clamps) spilled and blended, and took a fifth of a quantized
// UltraFace's run.
template <bool kUnsigned>
inline __m128i requantize8(__m256i sums, __m256 mult, __m256i zp) {
  const __m256 big = _mm256_set1_ps(4194304.f);
  __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(sums), mult);
  v = _mm256_min_ps(_mm256_max_ps(v, _mm256_sub_ps(_mm256_setzero_ps(), big)), big);
  const __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(v), zp);
  // Narrow to 16 bits (saturating), then to 8 (saturating to the type).
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  return kUnsigned ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
}

// requantize8 over n values, whose sums `sums8(i)` gives eight at a time
// (i + 8 <= n) and `one(i)` one at a time (for the last 1 to 7).
template <bool kUnsigned, typename Q, typename Sums8, typename One>
inline void requantize_rows(int64_t n, float mult, int32_t zp, Q* y, Sums8 sums8, One one) {
  const __m256 m = _mm256_set1_ps(mult);
  const __m256i z = _mm256_set1_epi32(zp);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), requantize8<kUnsigned>(sums8(i), m, z));
  if (i < n) {  // the last 1 to 7 through a buffer
    alignas(32) int32_t tail[8] = {};
    alignas(16) Q out[16];
    for (int64_t j = i; j < n; ++j) tail[j - i] = one(j);
    _mm_store_si128(reinterpret_cast<__m128i*>(out),
                    requantize8<kUnsigned>(_mm256_load_si256(reinterpret_cast<const __m256i*>(tail)), m, z));
    for (int64_t j = i; j < n; ++j) y[j] = out[j - i];
  }
}

template <bool kUnsigned, typename Q>
inline void requantize_any(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zp, Q* y) {
  const __m256i b = _mm256_set1_epi32(bias);
  requantize_rows<kUnsigned>(
      n, mult, zp, y,
      [&](int64_t i) { return _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i)), b); },
      [&](int64_t i) { return int32_t(uint32_t(acc[i]) + uint32_t(bias)); });
}

// From exact float sums: float(sum + bias) converted back to int32 exactly
// (below 2^25 in magnitude), then requantize8's own conversion to float
// gives that value again.
template <bool kUnsigned, typename Q>
inline void requantize_floats(const float* sums, int64_t n, float bias, float mult, int32_t zp, Q* y) {
  const __m256 b = _mm256_set1_ps(bias);
  requantize_rows<kUnsigned>(
      n, mult, zp, y, [&](int64_t i) { return _mm256_cvtps_epi32(_mm256_add_ps(_mm256_loadu_ps(sums + i), b)); },
      [&](int64_t i) { return int32_t(sums[i] + bias); });
}

// The packed product's block: rows m0 .. m0 + 3 of the weights by columns
// n0 .. n0 + 15 of U (those past N masked). vpmaddubsw would multiply the
// bytes as they are but saturates its pair sums to int16 (255 * 127 * 2 >
// 32767), so each operand is widened to int16 in its lane instead: a U
// word's bytes 0 and 2 (masked) and 1 and 3 (shifted down), zero-extended,
// against the weights' pairs widened once (widen_pairs); vpmaddwd then adds
// each pair of int16 products into the int32 lane exactly. Per four k: two
// loads of U, eight broadcasts of weight pairs, sixteen vpmaddwd into 8
// accumulators. kWhole: all 16 columns real (plain loads and stores).
template <bool kWhole>
inline void block_pairs(int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int32_t* W, int64_t m0, int64_t n0,
                        int32_t* C, int64_t ldc) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i k0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(N - n0)), lanes);
  const __m256i k1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(N - n0 - 8)), lanes);
  const __m256i even = _mm256_set1_epi32(0x00FF00FF);
  const int64_t wrow = K4 * 2;
  const int32_t* w = W + m0 * wrow;
#define KESTREL_ROW(r) __m256i c##r##a = _mm256_setzero_si256(), c##r##b = _mm256_setzero_si256();
  KESTREL_ROW(0) KESTREL_ROW(1) KESTREL_ROW(2) KESTREL_ROW(3)
#undef KESTREL_ROW
  for (int64_t k = 0; k < K4; ++k) {
    const int* u = reinterpret_cast<const int*>(U + (k * ldu + n0) * 4);
    const __m256i a0 = kWhole ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(u)) : _mm256_maskload_epi32(u, k0);
    const __m256i a1 = kWhole ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + 8)) : _mm256_maskload_epi32(u + 8, k1);
    const __m256i a0e = _mm256_and_si256(a0, even), a0o = _mm256_srli_epi16(a0, 8);
    const __m256i a1e = _mm256_and_si256(a1, even), a1o = _mm256_srli_epi16(a1, 8);
    const int32_t* wk = w + k * 2;
#define KESTREL_ROW(r)                                                                                         \
  {                                                                                                            \
    const __m256i be = _mm256_set1_epi32(wk[(r) * wrow]), bo = _mm256_set1_epi32(wk[(r) * wrow + 1]);          \
    c##r##a = _mm256_add_epi32(c##r##a, _mm256_add_epi32(_mm256_madd_epi16(a0e, be), _mm256_madd_epi16(a0o, bo))); \
    c##r##b = _mm256_add_epi32(c##r##b, _mm256_add_epi32(_mm256_madd_epi16(a1e, be), _mm256_madd_epi16(a1o, bo))); \
  }
    KESTREL_ROW(0) KESTREL_ROW(1) KESTREL_ROW(2) KESTREL_ROW(3)
#undef KESTREL_ROW
  }
  const auto store = [&](int32_t* at, __m256i k, __m256i v) {
    if (kWhole)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(at), v);
    else
      _mm256_maskstore_epi32(reinterpret_cast<int*>(at), k, v);
  };
#define KESTREL_ROW(r)                                \
  store(C + (m0 + (r)) * ldc + n0, k0, c##r##a);      \
  store(C + (m0 + (r)) * ldc + n0 + 8, k1, c##r##b);
  KESTREL_ROW(0) KESTREL_ROW(1) KESTREL_ROW(2) KESTREL_ROW(3)
#undef KESTREL_ROW
}

}  // namespace

void widen_pairs(const int8_t* S, int64_t n, int32_t* W) {
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* q = S + i * 4;
    W[i * 2] = int32_t(uint32_t(uint16_t(int16_t(q[0]))) | uint32_t(uint16_t(int16_t(q[2]))) << 16);
    W[i * 2 + 1] = int32_t(uint32_t(uint16_t(int16_t(q[1]))) | uint32_t(uint16_t(int16_t(q[3]))) << 16);
  }
}

void igemm_u8s8_pairs(int64_t M8, int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int32_t* W, int32_t* C,
                      int64_t ldc) {
  for (int64_t n0 = 0; n0 < N; n0 += 16)
    for (int64_t m0 = 0; m0 < M8; m0 += 4) {
      if (N - n0 >= 16)
        block_pairs<true>(N, K4, U, ldu, W, m0, n0, C, ldc);
      else
        block_pairs<false>(N, K4, U, ldu, W, m0, n0, C, ldc);
    }
}

void interleave_quads(const uint8_t* const planes[4], int64_t n, uint8_t flip, uint8_t pad, uint32_t* out) {
  const __m256i f = _mm256_set1_epi8(char(flip)), padv = _mm256_set1_epi8(char(pad));
  const auto load = [&](int j, int64_t i) {
    return planes[j] ? _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(planes[j] + i)), f) : padv;
  };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i a = load(0, i), b = load(1, i), c = load(2, i), d = load(3, i);
    // Within each 128-bit half: bytes of a and b in pairs, of c and d, then
    // the pairs in quads; the halves are put in pixel order by the stores.
    const __m256i ab_lo = _mm256_unpacklo_epi8(a, b), ab_hi = _mm256_unpackhi_epi8(a, b);
    const __m256i cd_lo = _mm256_unpacklo_epi8(c, d), cd_hi = _mm256_unpackhi_epi8(c, d);
    const __m256i w0 = _mm256_unpacklo_epi16(ab_lo, cd_lo), w1 = _mm256_unpackhi_epi16(ab_lo, cd_lo);
    const __m256i w2 = _mm256_unpacklo_epi16(ab_hi, cd_hi), w3 = _mm256_unpackhi_epi16(ab_hi, cd_hi);
    __m256i* o = reinterpret_cast<__m256i*>(out + i);
    _mm256_storeu_si256(o, _mm256_permute2x128_si256(w0, w1, 0x20));      // pixels 0-7
    _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(w2, w3, 0x20));  // 8-15
    _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(w0, w1, 0x31));  // 16-23
    _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(w2, w3, 0x31));  // 24-31
  }
  for (; i < n; ++i) {
    uint32_t word = 0;
    for (int j = 0; j < 4; ++j) word |= uint32_t(planes[j] ? uint8_t(planes[j][i] ^ flip) : pad) << (8 * j);
    out[i] = word;
  }
}

void add_scaled(int32_t* acc, const int32_t* sums, int64_t n, int32_t scale, int32_t offset) {
  for (int64_t i = 0; i < n; ++i)
    acc[i] = int32_t(uint32_t(acc[i]) + uint32_t(scale) * (uint32_t(sums[i]) - uint32_t(offset)));
}

void requantize_u8(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zp, uint8_t* y) {
  requantize_any<true>(acc, n, bias, mult, zp, y);
}
void requantize_s8(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zp, int8_t* y) {
  requantize_any<false>(acc, n, bias, mult, zp, y);
}
void requantize_exact_floats_u8(const float* sums, int64_t n, float bias, float mult, int32_t zp, uint8_t* y) {
  requantize_floats<true>(sums, n, bias, mult, zp, y);
}
void requantize_exact_floats_s8(const float* sums, int64_t n, float bias, float mult, int32_t zp, int8_t* y) {
  requantize_floats<false>(sums, n, bias, mult, zp, y);
}

// The fused activations' rows (qconv_activation_kernel.inc), 8 values a step.
namespace {
#include "ops/quantize_lanes.inc"
#include "ops/logistic_lanes.inc"
using ActivationLanes = Lanes8;
}  // namespace
#include "backends/cpu/qconv_activation_kernel.inc"

}  // namespace kestrel::backends::cpu::qconv_avx2

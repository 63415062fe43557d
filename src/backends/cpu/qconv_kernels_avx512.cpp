// QLinearConv's u8 x s8 product on AVX-512 VNNI (qconv_kernels.h):
// vpdpbusd adds four u8 x s8 products into each int32 lane without
// saturating, so every sum is exact. A block of 8 rows of S by 32 columns of
// U keeps 16 accumulators in registers; per four k, two 64-byte loads of U
// and eight broadcasts of four S bytes.
#include <immintrin.h>

#include <type_traits>

#include "backends/cpu/qconv_kernels.h"

namespace kestrel::backends::cpu::qconv_avx512 {
namespace {

// Rows m0 .. m0 + 7 by columns n0 .. n0 + 31 (the columns past N masked).
// The 16 accumulators are named one by one: held in an array, GCC 12 kept a
// copy of each on the stack and moved it through one register per product
// (measured: three moves per vpdpbusd).
template <typename Out>
inline void block(int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int8_t* S, int64_t m0, int64_t n0,
                  const Out& out) {
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
#define KESTREL_ROW(r) out(m0 + (r), n0, k0, k1, c##r##a, c##r##b);
  KESTREL_ROW(0) KESTREL_ROW(1) KESTREL_ROW(2) KESTREL_ROW(3) KESTREL_ROW(4) KESTREL_ROW(5) KESTREL_ROW(6) KESTREL_ROW(7)
#undef KESTREL_ROW
}

// qconv_avx2's requantize8 sixteen lanes at a time, with its bits: float(v)
// * mult, clamped to +-2^22, converted rounding half to even, plus the zero
// point, saturated to the 8-bit type (clamped then narrowed for uint8: the
// unsigned narrowing would read a negative value as a large one); the lanes
// past n masked, so a row's last 1 to 15 need no buffer.
template <bool kUnsigned, typename Q>
inline void requantize16(__m512i sums, __m512 mult, __m512i zp, __mmask16 k, Q* y) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(sums), mult);
  v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-4194304.f)), _mm512_set1_ps(4194304.f));
  const __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(v), zp);
  if (kUnsigned)
    _mm512_mask_cvtepi32_storeu_epi8(y, k, _mm512_min_epi32(_mm512_max_epi32(r, _mm512_setzero_si512()), _mm512_set1_epi32(255)));
  else
    _mm512_mask_cvtsepi32_storeu_epi8(y, k, r);
}

template <bool kUnsigned, typename Q, typename Sums16>
inline void requantize_rows(int64_t n, float mult, int32_t zp, Q* y, Sums16 sums16) {
  const __m512 m = _mm512_set1_ps(mult);
  const __m512i z = _mm512_set1_epi32(zp);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    requantize16<kUnsigned>(sums16(i, k), m, z, k, y + i);
  }
}

// The product's blocks requantized as they leave the registers.
template <bool kUnsigned, typename Q>
void igemm_requantized(int64_t M8, int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int8_t* S,
                       const QConvRequant& rq) {
  Q* y = static_cast<Q*>(rq.y);
  const __m512i z = _mm512_set1_epi32(rq.zero_point);
  const auto out = [&](int64_t m, int64_t n0, __mmask16 k0, __mmask16 k1, __m512i a, __m512i b) {
    if (m >= rq.rows) return;
    const __m512i bias = _mm512_set1_epi32(rq.bias[m]);
    const __m512 mult = _mm512_set1_ps(rq.mult[m]);
    requantize16<kUnsigned>(_mm512_add_epi32(a, bias), mult, z, k0, y + m * rq.ldy + n0);
    if (k1) requantize16<kUnsigned>(_mm512_add_epi32(b, bias), mult, z, k1, y + m * rq.ldy + n0 + 16);
  };
  for (int64_t n0 = 0; n0 < N; n0 += 32)
    for (int64_t m0 = 0; m0 < M8; m0 += 8) block(N, K4, U, ldu, S, m0, n0, out);
}

template <bool kUnsigned, typename Q>
inline void requantize_any(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zp, Q* y) {
  const __m512i b = _mm512_set1_epi32(bias);
  requantize_rows<kUnsigned>(n, mult, zp, y, [&](int64_t i, __mmask16 k) {
    return _mm512_add_epi32(_mm512_maskz_loadu_epi32(k, acc + i), b);
  });
}

template <bool kUnsigned, typename Q>
inline void requantize_floats(const float* sums, int64_t n, float bias, float mult, int32_t zp, Q* y) {
  const __m512 b = _mm512_set1_ps(bias);
  requantize_rows<kUnsigned>(n, mult, zp, y, [&](int64_t i, __mmask16 k) {
    return _mm512_cvtps_epi32(_mm512_add_ps(_mm512_maskz_loadu_ps(k, sums + i), b));
  });
}

}  // namespace

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

void igemm_u8s8_packed(int64_t M8, int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int8_t* S, int32_t* C,
                       int64_t ldc) {
  const auto out = [&](int64_t m, int64_t n0, __mmask16 k0, __mmask16 k1, __m512i a, __m512i b) {
    _mm512_mask_storeu_epi32(C + m * ldc + n0, k0, a);
    _mm512_mask_storeu_epi32(C + m * ldc + n0 + 16, k1, b);
  };
  for (int64_t n0 = 0; n0 < N; n0 += 32)
    for (int64_t m0 = 0; m0 < M8; m0 += 8) block(N, K4, U, ldu, S, m0, n0, out);
}

void igemm_u8s8_requantized(int64_t M8, int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int8_t* S,
                            const QConvRequant& rq) {
  if (rq.y_signed)
    igemm_requantized<false, int8_t>(M8, N, K4, U, ldu, S, rq);
  else
    igemm_requantized<true, uint8_t>(M8, N, K4, U, ldu, S, rq);
}

// The fused activations' rows (qconv_activation_kernel.inc), 16 values a step.
namespace {
#include "ops/simd_lanes16.inc"
#include "ops/quantize_lanes.inc"
#include "ops/logistic_lanes.inc"
using ActivationLanes = Lanes16;
}  // namespace
#include "backends/cpu/qconv_activation_kernel.inc"

}  // namespace kestrel::backends::cpu::qconv_avx512

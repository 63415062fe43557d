// QLinearConv's loops around its product on AVX2 (qconv_kernels.h): plain
// loops the compiler vectorizes for this file's instruction set.
#include "backends/cpu/qconv_kernels.h"

namespace kestrel::backends::cpu::qconv_avx2 {
namespace {

// requantize<Q>() (ops/requantize.h) for |float(acc + bias) * mult| within
// 2^22 (beyond, every result saturates: clamped there first), rounded half
// to even by adding and taking off 1.5 * 2^23.
template <typename Q>
inline void requantize_any(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zp, int32_t lo,
                           int32_t hi, Q* y) {
  const float magic = 12582912.f, big = 4194304.f;
  for (int64_t i = 0; i < n; ++i) {
    float v = float(int32_t(uint32_t(acc[i]) + uint32_t(bias))) * mult;
    v = v < -big ? -big : v > big ? big : v;
    int32_t r = int32_t((v + magic) - magic) + zp;
    r = r < lo ? lo : r > hi ? hi : r;
    y[i] = Q(r);
  }
}

}  // namespace

void add_scaled(int32_t* acc, const int32_t* sums, int64_t n, int32_t scale, int32_t offset) {
  for (int64_t i = 0; i < n; ++i)
    acc[i] = int32_t(uint32_t(acc[i]) + uint32_t(scale) * (uint32_t(sums[i]) - uint32_t(offset)));
}

void requantize_u8(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zp, uint8_t* y) {
  requantize_any(acc, n, bias, mult, zp, 0, 255, y);
}
void requantize_s8(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zp, int8_t* y) {
  requantize_any(acc, n, bias, mult, zp, -128, 127, y);
}

}  // namespace kestrel::backends::cpu::qconv_avx2

// The quantized MatMuls' u8 x s8 product on arm64 with the 8-bit dot
// product (SDOT, ARMv8.2's dotprod; qgemm_kernels.h), compiled for it and
// called only where the CPU reports it (cpu_arm_dotprod()). SDOT multiplies
// signed bytes, so A's bytes are flipped to U - 128 as they are loaded and
// the caller's col_add carries the 128 * sum_k w'[k, n] that takes back.
// The panels' four k of a column sit together, which is SDOT's group: a
// 16-byte load of a panel step is four columns' groups, and a lane of A's
// 16-byte load is one row's group. A block of 4 rows by the panel's 16
// columns keeps 16 accumulators; per 16 k, four loads of A and 16 of the
// panel feed 64 dot products. The sums are finished in scalar code with the
// reference's roundings (the file is compiled without contraction). Like the
// x86 kernel files it calls no function from a header (builtins only), so no
// out-of-line copy compiled for the dot product is shared with baseline code.
#include <arm_neon.h>

#include <cstdint>

#include "backends/cpu/qgemm_kernels.h"

namespace kestrel::backends::cpu {
namespace qgemm_neon {
namespace {

constexpr int kRows = 4;

inline int64_t least(int64_t a, int64_t b) { return a < b ? a : b; }
inline int32_t within(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : v; }

// Sums of row m, columns n .. n + count - 1, into the output (QGemmEpilogue
// says how), as the reference computes them: int32 terms wrapping, then
// float(v) * mult (+ bias), or round half to even (the default rounding
// mode) of float(v) * mult clamped to +-2^22, plus the zero point, saturated.
void finish(const int32_t* sums, int64_t m, int64_t n, int64_t count, const QGemmEpilogue& e) {
  for (int64_t j = 0; j < count; ++j) {
    uint32_t u = uint32_t(sums[j]) + uint32_t(e.col_add[n + j]);
    if (e.row_scale) u += uint32_t(e.row_sums[m]) * uint32_t(e.row_scale[n + j]);
    const int32_t v = int32_t(u);
    const int64_t at = m * e.ldy + n + j;
    if (e.y32) {
      e.y32[at] = v;
      continue;
    }
    const float mult = e.mult_per_column ? e.mult[n + j] : e.mult[0];
    if (e.yf) {
      float f = float(v) * mult;
      if (e.bias) f = f + e.bias[n + j];
      e.yf[at] = f;
      continue;
    }
    float f = float(v) * mult;
    f = f < -4194304.f ? -4194304.f : f > 4194304.f ? 4194304.f : f;
    const int32_t q = int32_t(__builtin_nearbyintf(f)) + e.zero_point;
    if (e.y_signed)
      static_cast<int8_t*>(e.y8)[at] = int8_t(within(q, -128, 127));
    else
      static_cast<uint8_t*>(e.y8)[at] = uint8_t(within(q, 0, 255));
  }
}

// Rows m0 .. m0 + rows - 1 (rows <= 4; the missing ones repeat the last
// row, their sums unused) by the panel's 16 columns at P, the first `count`
// of them written.
void block(int64_t m0, int64_t rows, int64_t n, int64_t count, int64_t K4, const uint8_t* A, int64_t lda,
           const int8_t* P, const QGemmEpilogue& e) {
  const uint8_t* a[kRows];
  for (int r = 0; r < kRows; ++r) a[r] = A + (m0 + (r < rows ? r : rows - 1)) * lda;
  int32x4_t acc[kRows][4];
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < 4; ++j) acc[r][j] = vdupq_n_s32(0);
  const uint8x16_t flip = vdupq_n_u8(0x80);
  int64_t k4 = 0;
  for (; k4 + 4 <= K4; k4 += 4) {  // 16 k: one load of each row
    int8x16_t x[kRows];
    for (int r = 0; r < kRows; ++r) x[r] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(a[r] + k4 * 4), flip));
#define KESTREL_QSTEP(LANE)                                                        \
  {                                                                               \
    const int8_t* b = P + (k4 + LANE) * 64;                                       \
    const int8x16_t b0 = vld1q_s8(b), b1 = vld1q_s8(b + 16), b2 = vld1q_s8(b + 32), \
                    b3 = vld1q_s8(b + 48);                                        \
    for (int r = 0; r < kRows; ++r) {                                             \
      acc[r][0] = vdotq_laneq_s32(acc[r][0], b0, x[r], LANE);                     \
      acc[r][1] = vdotq_laneq_s32(acc[r][1], b1, x[r], LANE);                     \
      acc[r][2] = vdotq_laneq_s32(acc[r][2], b2, x[r], LANE);                     \
      acc[r][3] = vdotq_laneq_s32(acc[r][3], b3, x[r], LANE);                     \
    }                                                                             \
  }
    KESTREL_QSTEP(0)
    KESTREL_QSTEP(1)
    KESTREL_QSTEP(2)
    KESTREL_QSTEP(3)
#undef KESTREL_QSTEP
  }
  for (; k4 < K4; ++k4) {  // the last few groups of 4 k, one at a time
    int8x16_t x[kRows];
    for (int r = 0; r < kRows; ++r) {
      uint32_t quad;
      __builtin_memcpy(&quad, a[r] + k4 * 4, 4);
      x[r] = vreinterpretq_s8_u8(veorq_u8(vreinterpretq_u8_u32(vdupq_n_u32(quad)), flip));
    }
    const int8_t* b = P + k4 * 64;
    const int8x16_t b0 = vld1q_s8(b), b1 = vld1q_s8(b + 16), b2 = vld1q_s8(b + 32), b3 = vld1q_s8(b + 48);
    for (int r = 0; r < kRows; ++r) {
      acc[r][0] = vdotq_laneq_s32(acc[r][0], b0, x[r], 0);
      acc[r][1] = vdotq_laneq_s32(acc[r][1], b1, x[r], 0);
      acc[r][2] = vdotq_laneq_s32(acc[r][2], b2, x[r], 0);
      acc[r][3] = vdotq_laneq_s32(acc[r][3], b3, x[r], 0);
    }
  }
  for (int r = 0; r < rows; ++r) {
    int32_t sums[16];
    for (int j = 0; j < 4; ++j) vst1q_s32(sums + 4 * j, acc[r][j]);
    finish(sums, m0 + r, n, count, e);
  }
}

}  // namespace

void qgemm_u8s8(int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K4, const uint8_t* A, int64_t lda,
                const int8_t* P, const QGemmEpilogue& e) {
  const int64_t panel_bytes = K4 * 64;
  for (int64_t n = n0; n < n1; n += kPanelColumns) {
    const int8_t* p = P + (n / kPanelColumns) * panel_bytes;
    const int64_t count = least(n1 - n, kPanelColumns);
    for (int64_t m = m0; m < m1; m += kRows) block(m, least(m1 - m, kRows), n, count, K4, A, lda, p, e);
  }
}

}  // namespace qgemm_neon
}  // namespace kestrel::backends::cpu

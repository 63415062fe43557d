// QLinearConv's u8 x s8 packed product on arm64 with the 8-bit dot product
// (SDOT, ARMv8.2's dotprod; qconv_kernels.h), compiled for it and called only
// where the CPU reports it (cpu_arm_dotprod()). SDOT multiplies signed bytes,
// so U's bytes are flipped to U - 128 as they are loaded, and each row's
// 128 * sum_k w'[m, k] (the weights' row sums, taken when they are arranged)
// takes that back: exact in int32 as on x86. The weights are arranged once a
// run in blocks of 8 rows, four k of 4 rows in one 16-byte vector, so that
// SDOT's lane form multiplies one load of 4 columns' quads of U by each of
// the 4 rows: per four k, two loads of U and two of the weights feed 16 dot
// products into 16 accumulators (8 rows x 8 columns). Like the x86 kernel
// files it uses nothing from a header but intrinsics.
#include <arm_neon.h>

#include <cstdint>

#include "backends/cpu/qconv_kernels.h"

namespace kestrel::backends::cpu::qconv_neon {
namespace {

// Rows m0 .. m0 + 7 by columns n0 .. n0 + 7 (kWhole: all 8 real; else the
// first `count`, through a buffer).
template <bool kWhole>
inline void block(int64_t count, int64_t K4, const uint8_t* U, int64_t ldu, const int8_t* W, const int32_t* fix,
                  int64_t n0, int32_t* C, int64_t ldc) {
  int32x4_t acc[8][2];
  for (int r = 0; r < 8; ++r) acc[r][0] = acc[r][1] = vdupq_n_s32(0);
  const uint8x16_t flip = vdupq_n_u8(0x80);
  for (int64_t k = 0; k < K4; ++k) {
    const uint8_t* u = U + (k * ldu + n0) * 4;
    uint8x16_t a0, a1;
    if (kWhole) {
      a0 = vld1q_u8(u);
      a1 = vld1q_u8(u + 16);
    } else {
      uint8_t part[32] = {};
      for (int64_t i = 0; i < count * 4; ++i) part[i] = u[i];
      a0 = vld1q_u8(part);
      a1 = vld1q_u8(part + 16);
    }
    const int8x16_t x0 = vreinterpretq_s8_u8(veorq_u8(a0, flip)), x1 = vreinterpretq_s8_u8(veorq_u8(a1, flip));
    const int8x16_t w0 = vld1q_s8(W + k * 32), w1 = vld1q_s8(W + k * 32 + 16);
#define KESTREL_ROWS(B, R0)                                     \
  acc[R0][0] = vdotq_laneq_s32(acc[R0][0], x0, B, 0);           \
  acc[R0][1] = vdotq_laneq_s32(acc[R0][1], x1, B, 0);           \
  acc[R0 + 1][0] = vdotq_laneq_s32(acc[R0 + 1][0], x0, B, 1);   \
  acc[R0 + 1][1] = vdotq_laneq_s32(acc[R0 + 1][1], x1, B, 1);   \
  acc[R0 + 2][0] = vdotq_laneq_s32(acc[R0 + 2][0], x0, B, 2);   \
  acc[R0 + 2][1] = vdotq_laneq_s32(acc[R0 + 2][1], x1, B, 2);   \
  acc[R0 + 3][0] = vdotq_laneq_s32(acc[R0 + 3][0], x0, B, 3);   \
  acc[R0 + 3][1] = vdotq_laneq_s32(acc[R0 + 3][1], x1, B, 3);
    KESTREL_ROWS(w0, 0)
    KESTREL_ROWS(w1, 4)
#undef KESTREL_ROWS
  }
  for (int r = 0; r < 8; ++r) {
    const int32x4_t f = vdupq_n_s32(fix[r]);
    const int32x4_t v0 = vaddq_s32(acc[r][0], f), v1 = vaddq_s32(acc[r][1], f);
    int32_t* c = C + r * ldc + n0;
    if (kWhole) {
      vst1q_s32(c, v0);
      vst1q_s32(c + 4, v1);
    } else {
      int32_t part[8];
      vst1q_s32(part, v0);
      vst1q_s32(part + 4, v1);
      for (int64_t i = 0; i < count; ++i) c[i] = part[i];
    }
  }
}

}  // namespace

void arrange_rows(const int8_t* S, int64_t M8, int64_t K4, int8_t* W, int32_t* fix) {
  const int64_t srow = K4 * 4;
  for (int64_t m0 = 0; m0 < M8; m0 += 8)
    for (int64_t k = 0; k < K4; ++k)
      for (int64_t r = 0; r < 8; ++r)
        for (int64_t b = 0; b < 4; ++b) W[(m0 * K4 + k * 8 + r) * 4 + b] = S[(m0 + r) * srow + k * 4 + b];
  for (int64_t m = 0; m < M8; ++m) {
    uint32_t sum = 0;
    for (int64_t i = 0; i < srow; ++i) sum += uint32_t(int32_t(S[m * srow + i]));
    fix[m] = int32_t(sum * 128u);
  }
}

void igemm_u8s8_dot(int64_t M8, int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int8_t* W,
                    const int32_t* fix, int32_t* C, int64_t ldc) {
  for (int64_t n0 = 0; n0 < N; n0 += 8)
    for (int64_t m0 = 0; m0 < M8; m0 += 8) {
      const int8_t* w = W + m0 * K4 * 4;
      if (N - n0 >= 8)
        block<true>(8, K4, U, ldu, w, fix + m0, n0, C + m0 * ldc, ldc);
      else
        block<false>(N - n0, K4, U, ldu, w, fix + m0, n0, C + m0 * ldc, ldc);
    }
}

void interleave_quads(const uint8_t* const planes[4], int64_t n, uint8_t flip, uint8_t pad, uint32_t* out) {
  const uint8x16_t f = vdupq_n_u8(flip), padv = vdupq_n_u8(pad);
  const auto load = [&](int j, int64_t i) { return planes[j] ? veorq_u8(vld1q_u8(planes[j] + i), f) : padv; };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint8x16x4_t q;  // vst4 writes byte i of each plane together: pixel i's word
    q.val[0] = load(0, i);
    q.val[1] = load(1, i);
    q.val[2] = load(2, i);
    q.val[3] = load(3, i);
    vst4q_u8(reinterpret_cast<uint8_t*>(out + i), q);
  }
  for (; i < n; ++i) {
    uint32_t word = 0;
    for (int j = 0; j < 4; ++j) word |= uint32_t(planes[j] ? uint8_t(planes[j][i] ^ flip) : pad) << (8 * j);
    out[i] = word;
  }
}

}  // namespace kestrel::backends::cpu::qconv_neon

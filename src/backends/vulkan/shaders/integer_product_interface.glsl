// What the integer products' kernels share (ops/integer_product.cpp records
// them): gemm_integer_coop_body.glsl (int8 tensor cores) and
// gemm_integer_dot.comp (packed int8 dot products). Both multiply signed
// bytes: a uint8 operand enters shifted, u - 128 (its bytes xor 0x80), and
// its zero point with it, so
//   sum_k (a - za)(b - zb) = sum_k (a' - za')(b' - zb')
//     = sum_k a'b' - zb' rowsum(a') - za' colsum(b') + K za' zb'
// with a' = a - 128, za' = za - 128 for uint8 A (b likewise), a' = a for
// int8. The kernel gives the first sum; integer_sums.comp wrote A's row sums
// and B's column sums of the shifted bytes into `sums` (M row sums, then N
// column sums) before it. Every term is exact in int32 (wrapping where the
// reference's sums would not fit, as two's complement gives the same low
// bits). One batch: the host stacks a product's batches into its rows, and B
// is one matrix.
//
// The sums are finished as they are stored (OUT; ops/integer_product.h):
//   0  stored as int32 (MatMulInteger, or scratch for a pass after);
//   1  requantized to 8 bits, as requantize.comp does: round(float(sum) *
//      mult[n or 0]) + Y's zero point (the push constants' beta), saturated,
//      whole words of 4 outputs (the host checked N is a multiple of 4);
//   2  dequantized to float32, as dequantize_product.comp does:
//      float(sum) * (a_scale[0] * b_scale[n or 0]) [+ bias[n]].
#include "gemm_push.glsl"
#include "packed_bytes.glsl"
layout(constant_id = 0) const int A_SIGNED = 0;
layout(constant_id = 1) const int B_SIGNED = 0;
layout(constant_id = 2) const int A_ZP = 0;  // a_zero_point: 0 none, 1 one value, 2 one per row of A
layout(constant_id = 3) const int B_ZP = 0;  // b_zero_point: 0 none, 1 one value, 2 one per column of B
layout(constant_id = 4) const int A_KCONTIG = 1;  // A's k index has unit stride (else its m index does)
layout(constant_id = 5) const int B_NCONTIG = 1;  // B's n index has unit stride (else its k index does)
// The including kernel's wide loads of A and B (it says what the host checked).
layout(constant_id = 6) const int A_VEC = 0;
layout(constant_id = 7) const int B_VEC = 0;
// Y's rows hold a multiple of 4 outputs from a 16-byte aligned binding: 4
// consecutive 32-bit outputs go out as one 16-byte word.
layout(constant_id = 8) const int Y_VEC = 0;
layout(constant_id = 9) const int OUT = 0;
layout(constant_id = 10) const int PER_COLUMN = 0;  // mult (OUT 1) or b_scale (OUT 2) holds one value per column
layout(constant_id = 11) const int HAS_BIAS = 0;    // OUT 2
layout(constant_id = 12) const int Y_SIGNED = 0;    // OUT 1: int8, else uint8
layout(std430, binding = 0) readonly buffer A_ { uint a[]; };
layout(std430, binding = 0) readonly buffer A4_ { uvec4 a4[]; };
layout(std430, binding = 1) readonly buffer B_ { uint b[]; };
layout(std430, binding = 1) readonly buffer B4_ { uvec4 b4[]; };
layout(std430, binding = 2) readonly buffer S_ { int sums[]; };
layout(std430, binding = 3) writeonly buffer Y_ { int y[]; };
layout(std430, binding = 3) writeonly buffer Y4_ { ivec4 y4[]; };
layout(std430, binding = 3) writeonly buffer YQ_ { uint yq[]; };
layout(std430, binding = 3) writeonly buffer YF_ { float yf[]; };
layout(std430, binding = 3) writeonly buffer YF4_ { vec4 yf4[]; };
layout(std430, binding = 4) readonly buffer AZ_ { uint az[]; };
layout(std430, binding = 5) readonly buffer BZ_ { uint bz[]; };
layout(std430, binding = 6) readonly buffer F1_ { float first[]; };   // OUT 1: mult; OUT 2: a_scale
layout(std430, binding = 7) readonly buffer F2_ { float second[]; };  // OUT 2: b_scale
layout(std430, binding = 8) readonly buffer BIAS_ { float bias[]; };

// The shifted zero points za', zb' (above).
int a_zero(uint m) {
  int z = A_ZP == 0 ? 0 : packed_byte(az[A_ZP == 1 ? 0 : m >> 2], A_ZP == 1 ? 0 : m, A_SIGNED != 0);
  return A_SIGNED != 0 ? z : z - 128;
}
int b_zero(uint n) {
  int z = B_ZP == 0 ? 0 : packed_byte(bz[B_ZP == 1 ? 0 : n >> 2], B_ZP == 1 ? 0 : n, B_SIGNED != 0);
  return B_SIGNED != 0 ? z : z - 128;
}

// A word of 4 bytes shifted into int8 where the operand is uint8.
uint to_signed4(uint w, bool signed_) { return signed_ ? w : w ^ 0x80808080u; }

// 4 bytes of A (from_a) or B from element `at` on, `step` apart, shifted
// into int8 where the operand is uint8: the first `n` of them, the rest zero
// (and not read: they may lie past the buffer).
uint gather4(bool from_a, uint at, uint step, uint n, bool signed_) {
  uint v = 0u;
  [[unroll]] for (uint h = 0; h < 4; ++h) {
    uint i = at + h * step;
    uint w = h < n ? (from_a ? a[i >> 2] : b[i >> 2]) : 0u;
    uint byte_ = h < n ? ((w >> (8 * (i & 3u))) & 0xffu) ^ (signed_ ? 0u : 0x80u) : 0u;
    v |= byte_ << (8 * h);
  }
  return v;
}

// Outputs (gm, gn) to (gm, gn + 3) from their sums of shifted bytes `acc`
// (gm < M; gn a multiple of 4 below N; those past N not stored).
void integer_store4(uint gm, uint gn, ivec4 acc) {
  const int za = a_zero(gm), row_sum = sums[gm], K = int(pc.K);
  ivec4 v;
  [[unroll]] for (uint q = 0; q < 4; ++q) {
    uint n = min(gn + q, pc.N - 1);  // past N: a value not stored
    int zb = b_zero(n);
    v[q] = acc[q] - zb * row_sum - za * sums[pc.M + n] + K * za * zb;
  }
  uint at = gm * pc.N + gn;
  if (OUT == 1) {
    const float lo = Y_SIGNED != 0 ? -128.0 : 0.0, hi = Y_SIGNED != 0 ? 127.0 : 255.0;
    uint w = 0u;
    [[unroll]] for (uint q = 0; q < 4; ++q) {
      float m = first[PER_COLUMN != 0 ? min(gn + q, pc.N - 1) : 0];
      float r = clamp(roundEven(float(v[q]) * m) + pc.beta, lo, hi);
      w |= (uint(int(r)) & 0xffu) << (8 * q);
    }
    yq[at / 4] = w;
    return;
  }
  if (OUT == 2) {
    vec4 f;
    [[unroll]] for (uint q = 0; q < 4; ++q) {
      uint n = min(gn + q, pc.N - 1);
      precise float s = first[0] * second[PER_COLUMN != 0 ? n : 0];
      precise float x = float(v[q]) * s;
      if (HAS_BIAS != 0) x = x + bias[n];
      f[q] = x;
    }
    if (Y_VEC != 0) {
      yf4[at / 4] = f;
      return;
    }
    [[unroll]] for (uint q = 0; q < 4; ++q)
      if (gn + q < pc.N) yf[at + q] = f[q];
    return;
  }
  if (Y_VEC != 0) {
    y4[at / 4] = v;
    return;
  }
  [[unroll]] for (uint q = 0; q < 4; ++q)
    if (gn + q < pc.N) y[at + q] = v[q];
}

// MatMulInteger's exact int32 product (gemm_integer.comp's) on int8 tensor
// cores (VK_KHR_cooperative_matrix, 16x16x32 int8 x int8 + int32 per
// subgroup): coop_tile_body.glsl's tile with COOP_INT8, one batch (the host
// stacks a product's batches into its rows, B is one matrix).
//
// The tensor cores multiply signed bytes. A uint8 operand enters shifted,
// u - 128 (its bytes xor 0x80), and its zero point with it, so
//   sum_k (a - za)(b - zb) = sum_k (a' - za')(b' - zb')
//     = sum_k a'b' - zb' rowsum(a') - za' colsum(b') + K za' zb'
// with a' = a - 128, za' = za - 128 for uint8 A (b likewise), a' = a for
// int8. The tensor cores give the first sum; integer_sums.comp wrote A's
// row sums and B's column sums of the shifted bytes into `sums` (M row sums,
// then N column sums) before this kernel. Every term is exact in int32
// (wrapping where the reference's sums would not fit, as two's complement
// gives the same low bits).
//
// The sums are finished in the epilogue (OUT; ops/integer_product.h):
//   0  stored as int32 (MatMulInteger, or scratch for a pass after);
//   1  requantized to 8 bits, as requantize.comp does: round(float(sum) *
//      mult[n or 0]) + Y's zero point (the push constants' beta), saturated,
//      a lane's 8 outputs two whole words (N a multiple of 4);
//   2  dequantized to float32, as dequantize_product.comp does:
//      float(sum) * (a_scale[0] * b_scale[n or 0]) [+ bias[n]].
//
// The including file defines BM, WARPS_N, FM, FN and GEMM_THREADS.
#define COOP_INT8
#include "gemm_push.glsl"
#include "packed_bytes.glsl"
layout(local_size_x = GEMM_THREADS) in;
layout(constant_id = 0) const int A_SIGNED = 0;
layout(constant_id = 1) const int B_SIGNED = 0;
layout(constant_id = 2) const int A_ZP = 0;  // a_zero_point: 0 none, 1 one value, 2 one per row of A
layout(constant_id = 3) const int B_ZP = 0;  // b_zero_point: 0 none, 1 one value, 2 one per column of B
layout(constant_id = 4) const int A_KCONTIG = 1;  // A's k index has unit stride (else its m index does)
layout(constant_id = 5) const int B_NCONTIG = 1;  // B's n index has unit stride (else its k index does)
// Rows of 16 bytes aligned to 16 along the unit-stride index (set by the
// host): one 16-byte load per item, else byte by byte.
layout(constant_id = 6) const int A_VEC = 0;
layout(constant_id = 7) const int B_VEC = 0;
// Y's rows hold a multiple of 4 outputs from a 16-byte aligned binding: a
// lane's 8 outputs go out as two 16-byte words.
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

const bool A_KMAJOR = A_KCONTIG != 0, B_KMAJOR = B_NCONTIG == 0;
uint coop_M, coop_N, coop_K, m0, n0;

// The shifted zero points za', zb' (above).
int a_zero(uint m) {
  int z = A_ZP == 0 ? 0 : packed_byte(az[A_ZP == 1 ? 0 : m >> 2], A_ZP == 1 ? 0 : m, A_SIGNED != 0);
  return A_SIGNED != 0 ? z : z - 128;
}
int b_zero(uint n) {
  int z = B_ZP == 0 ? 0 : packed_byte(bz[B_ZP == 1 ? 0 : n >> 2], B_ZP == 1 ? 0 : n, B_SIGNED != 0);
  return B_SIGNED != 0 ? z : z - 128;
}

// 16 bytes from element `at` on, `step` apart, `n` of them in range (the
// rest zero), shifted into int8 where the operand is uint8.
uvec4 gather16(bool from_a, uint at, uint step, uint n, bool signed_) {
  uvec4 v = uvec4(0);
  [[unroll]] for (uint h = 0; h < 16; ++h) {
    uint i = at + h * step;
    uint w = from_a ? a[i >> 2] : b[i >> 2];
    uint byte_ = h < n ? ((w >> (8 * (i & 3u))) & 0xffu) ^ (signed_ ? 0u : 0x80u) : 0u;
    v[h / 4] |= byte_ << (8 * (h % 4));
  }
  return v;
}

uvec4 coop_load_a(uint gm, uint gk) {
  if (A_VEC != 0) {
    if (gm >= pc.M || gk >= pc.K) return uvec4(0);
    return a4[(gm * pc.sam + gk) / 16] ^ uvec4(A_SIGNED != 0 ? 0u : 0x80808080u);
  }
  bool inside = A_KMAJOR ? gm < pc.M : gk < pc.K;
  uint n = !inside ? 0 : A_KMAJOR ? min(16u, pc.K - min(gk, pc.K)) : min(16u, pc.M - min(gm, pc.M));
  return gather16(true, gm * pc.sam + gk * pc.sak, A_KMAJOR ? pc.sak : pc.sam, n, A_SIGNED != 0);
}

uvec4 coop_load_b(uint gk, uint gn) {
  if (B_VEC != 0) {
    if (gn >= pc.N || gk >= pc.K) return uvec4(0);
    return b4[(gk * pc.sbk + gn) / 16] ^ uvec4(B_SIGNED != 0 ? 0u : 0x80808080u);
  }
  bool inside = B_KMAJOR ? gn < pc.N : gk < pc.K;
  uint n = !inside ? 0 : B_KMAJOR ? min(16u, pc.K - min(gk, pc.K)) : min(16u, pc.N - min(gn, pc.N));
  return gather16(false, gk * pc.sbk + gn * pc.sbn, B_KMAJOR ? pc.sbk : pc.sbn, n, B_SIGNED != 0);
}

void coop_store8(uint gm, uint gn, int acc[8]) {
  const int za = a_zero(gm), row_sum = sums[gm], K = int(pc.K);
  int v[8];
  [[unroll]] for (uint q = 0; q < 8; ++q) {
    uint n = min(gn + q, pc.N - 1);  // past N: a value not stored
    int zb = b_zero(n);
    v[q] = acc[q] - zb * row_sum - za * sums[pc.M + n] + K * za * zb;
  }
  uint at = gm * pc.N + gn;
  if (OUT == 1) {  // (N a multiple of 4 and gn of 8: gn + 3 < N whenever gn < N)
    const float lo = Y_SIGNED != 0 ? -128.0 : 0.0, hi = Y_SIGNED != 0 ? 127.0 : 255.0;
    uint w[2] = {0u, 0u};
    [[unroll]] for (uint q = 0; q < 8; ++q) {
      float m = first[PER_COLUMN != 0 ? min(gn + q, pc.N - 1) : 0];
      float r = clamp(roundEven(float(v[q]) * m) + pc.beta, lo, hi);
      w[q / 4] |= (uint(int(r)) & 0xffu) << (8 * (q % 4));
    }
    yq[at / 4] = w[0];
    if (gn + 4 < pc.N) yq[at / 4 + 1] = w[1];
    return;
  }
  if (OUT == 2) {
    float f[8];
    [[unroll]] for (uint q = 0; q < 8; ++q) {
      uint n = min(gn + q, pc.N - 1);
      precise float s = first[0] * second[PER_COLUMN != 0 ? n : 0];
      precise float x = float(v[q]) * s;
      if (HAS_BIAS != 0) x = x + bias[n];
      f[q] = x;
    }
    if (Y_VEC != 0) {
      yf4[at / 4] = vec4(f[0], f[1], f[2], f[3]);
      if (gn + 4 < pc.N) yf4[at / 4 + 1] = vec4(f[4], f[5], f[6], f[7]);
      return;
    }
    [[unroll]] for (uint q = 0; q < 8; ++q)
      if (gn + q < pc.N) yf[at + q] = f[q];
    return;
  }
  if (Y_VEC != 0) {  // N a multiple of 4 and gn of 8: gn + 3 < N whenever gn < N
    y4[at / 4] = ivec4(v[0], v[1], v[2], v[3]);
    if (gn + 4 < pc.N) y4[at / 4 + 1] = ivec4(v[4], v[5], v[6], v[7]);
    return;
  }
  [[unroll]] for (uint q = 0; q < 8; ++q)
    if (gn + q < pc.N) y[at + q] = v[q];
}

#include "coop_tile_body.glsl"

void main() {
  coop_M = pc.M, coop_N = pc.N, coop_K = pc.K;
  m0 = (pc.mtile_base + gl_WorkGroupID.y) * BM;
  n0 = gl_WorkGroupID.x * BN;
  coop_tile_run();
}

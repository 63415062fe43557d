// MatMulInteger's exact int32 product (gemm_integer.comp's) on int8 tensor
// cores (VK_KHR_cooperative_matrix, 16x16x32 int8 x int8 + int32 per
// subgroup): coop_tile_body.glsl's tile with COOP_INT8, the operands
// shifted into int8 and the sums corrected and finished as
// integer_product_interface.glsl says. A_VEC / B_VEC: the operand's rows of
// 16 bytes along its unit-stride index start 16-byte aligned (one 16-byte
// load per item, else byte by byte).
//
// The including file defines BM, WARPS_N, FM, FN and GEMM_THREADS.
#define COOP_INT8
#include "integer_product_interface.glsl"
layout(local_size_x = GEMM_THREADS) in;

const bool A_KMAJOR = A_KCONTIG != 0, B_KMAJOR = B_NCONTIG == 0;
uint coop_M, coop_N, coop_K, m0, n0;

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
  integer_store4(gm, gn, ivec4(acc[0], acc[1], acc[2], acc[3]));
  if (gn + 4 < pc.N) integer_store4(gm, gn + 4, ivec4(acc[4], acc[5], acc[6], acc[7]));
}

#include "coop_tile_body.glsl"

void main() {
  coop_M = pc.M, coop_N = pc.N, coop_K = pc.K;
  m0 = (pc.mtile_base + gl_WorkGroupID.y) * BM;
  n0 = gl_WorkGroupID.x * BN;
  coop_tile_run();
}

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

// 16 bytes of A (from_a) or B at row i (m of A, n of B; `size` rows) and k,
// along k where the operand is k-major, else along its rows; element (i, k)
// at i * si + k * sk. Zero outside the problem; shifted into int8 where the
// operand is uint8. `vec`: one 16-byte load (the host checked the unit
// stride and alignment).
uvec4 load16(bool from_a, bool vec, bool signed_, bool kmajor, uint i, uint k, uint size, uint si, uint sk) {
  const uint at = i * si + k * sk;
  if (vec) {
    if (i >= size || k >= pc.K) return uvec4(0);
    uvec4 w = from_a ? a4[at / 16] : b4[at / 16];
    [[unroll]] for (uint q = 0; q < 4; ++q) w[q] = to_signed4(w[q], signed_);
    return w;
  }
  bool inside = kmajor ? i < size : k < pc.K;
  uint n = !inside ? 0 : kmajor ? min(16u, pc.K - min(k, pc.K)) : min(16u, size - min(i, size));
  uint step = kmajor ? sk : si;
  uvec4 v;
  [[unroll]] for (uint q = 0; q < 4; ++q)
    v[q] = gather4(from_a, at + 4 * q * step, step, n > 4 * q ? n - 4 * q : 0, signed_);
  return v;
}

uvec4 coop_load_a(uint gm, uint gk) {
  return load16(true, A_VEC != 0, A_SIGNED != 0, A_KMAJOR, gm, gk, pc.M, pc.sam, pc.sak);
}
uvec4 coop_load_b(uint gk, uint gn) {
  return load16(false, B_VEC != 0, B_SIGNED != 0, B_KMAJOR, gn, gk, pc.N, pc.sbn, pc.sbk);
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

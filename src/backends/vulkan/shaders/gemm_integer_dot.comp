#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
#extension GL_EXT_control_flow_attributes : require
// MatMulInteger's exact int32 product on packed int8 dot products
// (VK_KHR_shader_integer_dot_product: four byte products and their sum in
// one instruction, where the hardware has it; Mali, Adreno and desktop GPUs
// do), for devices without int8 tensor cores. The operands are shifted into
// int8 and the sums corrected and finished as integer_product_interface.glsl
// says. Tiled as gemm_integer.comp is: 64x64 outputs a workgroup, 4x4 per
// thread, K in chunks of 32 through two shared-memory stages, here as words
// of 4 consecutive k (a row of A's, a column of B's), the next chunk's loads
// in flight while one is multiplied. A_VEC / B_VEC: the operand's 4
// consecutive k are one aligned word (k of unit stride, K and the other
// stride multiples of 4, a 4-byte aligned binding), else gathered byte by
// byte.
#include "integer_product_interface.glsl"
layout(local_size_x = 256) in;

// OpSDot on two words of 4 signed bytes (SPV_KHR_integer_dot_product; the
// pinned glslang has no GL_EXT_integer_dot_product, so the instruction is
// declared through GL_EXT_spirv_intrinsics: capabilities DotProduct and
// DotProductInput4x8BitPacked, packed vector format 0, 4x8 bit).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot_packed(int a, int b, spirv_literal int packed_vector_format);
int dot4(uint a, uint b) { return sdot_packed(int(a), int(b), 0); }

const uint BM = 64, BN = 64, BK = 32, KQ = BK / 4;  // KQ words of 4 k per row or column per chunk
const uint ITEMS = BM * KQ / 256;  // words of each operand a thread loads per chunk
shared uvec4 As[2][KQ][BM / 4 + 1];
shared uvec4 Bs[2][KQ][BN / 4 + 1];

uint m0, n0;
uint ra[ITEMS], rb[ITEMS];

// Word e of a chunk (0 .. BM * KQ - 1): consecutive threads along A's rows'
// words (k) and along B's columns (n), the operands' usual unit strides.
void load_chunk(uint k0) {
  [[unroll]] for (uint r = 0; r < ITEMS; ++r) {
    uint e = gl_LocalInvocationID.x + 256 * r;
    uint gm = m0 + e / KQ, gk = k0 + 4 * (e % KQ);
    uint inside = gm < pc.M && gk < pc.K ? min(4u, pc.K - gk) : 0u;
    if (A_VEC != 0)
      ra[r] = inside != 0 ? to_signed4(a[(gm * pc.sam + gk) >> 2], A_SIGNED != 0) : 0u;
    else
      ra[r] = gather4(true, gm * pc.sam + gk * pc.sak, pc.sak, inside, A_SIGNED != 0);
    uint gn = n0 + e % BN, gkb = k0 + 4 * (e / BN);
    inside = gn < pc.N && gkb < pc.K ? min(4u, pc.K - gkb) : 0u;
    if (B_VEC != 0)
      rb[r] = inside != 0 ? to_signed4(b[(gkb + gn * pc.sbn) >> 2], B_SIGNED != 0) : 0u;
    else
      rb[r] = gather4(false, gkb * pc.sbk + gn * pc.sbn, pc.sbk, inside, B_SIGNED != 0);
  }
}

void store_chunk(uint s) {
  [[unroll]] for (uint r = 0; r < ITEMS; ++r) {
    uint e = gl_LocalInvocationID.x + 256 * r;
    uint am = e / KQ, aq = e % KQ, bn = e % BN, bq = e / BN;
    As[s][aq][am / 4][am % 4] = ra[r];
    Bs[s][bq][bn / 4][bn % 4] = rb[r];
  }
}

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 16, ty = tid / 16;
  m0 = (pc.mtile_base + gl_WorkGroupID.y) * BM;
  n0 = gl_WorkGroupID.x * BN;
  ivec4 acc[4];
  [[unroll]] for (uint q = 0; q < 4; ++q) acc[q] = ivec4(0);

  uint chunks = (pc.K + BK - 1) / BK;
  load_chunk(0);
  store_chunk(0);
  barrier();
  for (uint t = 0; t < chunks; ++t) {
    uint s = t & 1;
    if (t + 1 < chunks) load_chunk((t + 1) * BK);
    [[unroll]] for (uint q = 0; q < KQ; ++q) {
      uvec4 av = As[s][q][ty], bv = Bs[s][q][tx];
      [[unroll]] for (uint i = 0; i < 4; ++i)
        [[unroll]] for (uint j = 0; j < 4; ++j) acc[i][j] += dot4(av[i], bv[j]);
    }
    if (t + 1 < chunks) store_chunk(s ^ 1);
    barrier();
  }

  [[unroll]] for (uint i = 0; i < 4; ++i) {
    uint gm = m0 + ty * 4 + i, gn = n0 + tx * 4;
    if (gm < pc.M && gn < pc.N) integer_store4(gm, gn, acc[i]);
  }
}

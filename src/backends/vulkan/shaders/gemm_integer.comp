#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// MatMulInteger: Y[b] = (A[b] - a_zero_point) x (B[b] - b_zero_point) with
// 8-bit operands (packed four to a word) and exact int32 sums, as the
// reference has them. Tiled as the plain float GEMM is (gemm_body.glsl):
// 64x64 outputs a workgroup, 4x4 blocks per thread, K in chunks of 16
// through two shared-memory stages, here of zero-point-subtracted ints, the
// next chunk's loads in flight while one is multiplied. A and B are
// addressed through the float GEMM's strides and batch dims (GemmPush); Y is
// dense [batch, M, N].
layout(local_size_x = 256) in;
layout(constant_id = 0) const int A_SIGNED = 0;
layout(constant_id = 1) const int B_SIGNED = 0;
layout(constant_id = 2) const int A_ZP = 0;  // a_zero_point: 0 none, 1 one value, 2 one per row of A
layout(constant_id = 3) const int B_ZP = 0;  // b_zero_point: 0 none, 1 one value, 2 one per column of B
layout(std430, binding = 0) readonly buffer A_ { uint a[]; };
layout(std430, binding = 1) readonly buffer B_ { uint b[]; };
layout(std430, binding = 2) readonly buffer AZ_ { uint az[]; };
layout(std430, binding = 3) writeonly buffer Y_ { int y[]; };
layout(std430, binding = 4) readonly buffer BZ_ { uint bz[]; };
#include "gemm_push.glsl"
#include "packed_bytes.glsl"

const uint BM = 64, BN = 64, BK = 16;
const uint LOADS = BM * BK / 256;  // elements of each operand a thread loads per chunk
shared ivec4 As[2][BK][BM / 4 + 1];
shared ivec4 Bs[2][BK][BN / 4 + 1];

int a_zero(uint m) { return A_ZP == 0 ? 0 : packed_byte(az[A_ZP == 1 ? 0 : m >> 2], A_ZP == 1 ? 0 : m, A_SIGNED != 0); }
int b_zero(uint n) { return B_ZP == 0 ? 0 : packed_byte(bz[B_ZP == 1 ? 0 : n >> 2], B_ZP == 1 ? 0 : n, B_SIGNED != 0); }

uint oa, ob, m0, n0;
int ra[LOADS], rb[LOADS];

// Element e (0 .. BM*BK-1) of a chunk: consecutive threads along A's k and
// B's n, the unit-stride indices of MatMul's operands.
void load_chunk(uint k0) {
  [[unroll]] for (uint r = 0; r < LOADS; ++r) {
    uint e = gl_LocalInvocationID.x + 256 * r;
    uint gm = m0 + e / BK, gka = k0 + e % BK;
    uint ia = oa + gm * pc.sam + gka * pc.sak;
    ra[r] = (gm < pc.M && gka < pc.K) ? packed_byte(a[ia >> 2], ia, A_SIGNED != 0) - a_zero(gm) : 0;
    uint gn = n0 + e % BN, gkb = k0 + e / BN;
    uint ib = ob + gkb * pc.sbk + gn * pc.sbn;
    rb[r] = (gn < pc.N && gkb < pc.K) ? packed_byte(b[ib >> 2], ib, B_SIGNED != 0) - b_zero(gn) : 0;
  }
}

void store_chunk(uint s) {
  [[unroll]] for (uint r = 0; r < LOADS; ++r) {
    uint e = gl_LocalInvocationID.x + 256 * r;
    uint am = e / BK, ak = e % BK, bn = e % BN, bk = e / BN;
    As[s][ak][am / 4][am % 4] = ra[r];
    Bs[s][bk][bn / 4][bn % 4] = rb[r];
  }
}

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 16, ty = tid / 16;
  uint batch = pc.batch_base + gl_WorkGroupID.z;
  uint rest = batch;
  oa = 0;
  ob = 0;
  for (int d = 3; d >= 0; --d) {
    uint i = rest % pc.bdims[d];
    rest /= pc.bdims[d];
    oa += i * pc.sab[d];
    ob += i * pc.sbb[d];
  }
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
    [[unroll]] for (uint k = 0; k < BK; ++k) {
      ivec4 av = As[s][k][ty], bv = Bs[s][k][tx];
      acc[0] += av.x * bv;
      acc[1] += av.y * bv;
      acc[2] += av.z * bv;
      acc[3] += av.w * bv;
    }
    if (t + 1 < chunks) store_chunk(s ^ 1);
    barrier();
  }

  uint ybase = batch * pc.M * pc.N;
  [[unroll]] for (uint q = 0; q < 4; ++q) {
    uint gm = m0 + ty * 4 + q;
    if (gm >= pc.M) continue;
    [[unroll]] for (uint l = 0; l < 4; ++l) {
      uint gn = n0 + tx * 4 + l;
      if (gn < pc.N) y[ybase + gm * pc.N + gn] = acc[q][l];
    }
  }
}

#version 450
#extension GL_GOOGLE_include_directive : require
// gemm.comp with 128x128 output tiles: each of the 256 threads computes an
// 8x8 block (rows ty*4.. and 64+ty*4.., columns likewise), so every value
// read from shared memory feeds twice the multiply-adds; K in chunks of 8.
// For GPUs with registers to spare (the host picks it on discrete GPUs for
// products of at least 128x128; KESTREL_GEMM_TILE=64|128 forces a size).
// Otherwise as gemm.comp: Y[b] = act(alpha * op(A[b]) op(B[b]) + beta * C) [+ R]. A and B are addressed through strides, so transposed
// operands and broadcast batches need no copies. gz walks the batch (decoded
// over up to 4 batch dims), gy the row tiles from mtile_base. Y is dense
// [batch, M, N] unless sym is set: then row stride sym and batch strides syb
// (a head's slice of a [tokens, heads * head_dim] matrix). R, read at Y's
// index, is a residual added last; it may be Y itself (in place).
#include "common.glsl"
#include "activation.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int ACT = 0;
layout(constant_id = 1) const int A_KCONTIG = 1;  // A's k index has unit stride (else its m index does)
layout(constant_id = 2) const int B_NCONTIG = 1;  // B's n index has unit stride (else its k index does)
layout(constant_id = 3) const int HAS_C = 0;
layout(constant_id = 4) const int HAS_R = 0;
layout(std430, binding = 0) readonly buffer A_ { T a[]; };
layout(std430, binding = 1) readonly buffer B_ { T b[]; };
layout(std430, binding = 2) readonly buffer C_ { T c[]; };
layout(std430, binding = 3) buffer Y_ { T y[]; };
layout(std430, binding = 4) readonly buffer R_ { T r[]; };
layout(push_constant) uniform Push {
  uint M, N, K;
  uint batch_base, mtile_base;
  uint sam, sak, sbk, sbn;  // element strides of A along m, k and of B along k, n
  uint scm, scn;            // C's strides along m, n (0 where it broadcasts)
  float alpha, beta, act_a, act_b;
  uint bdims[4];            // output batch dims (leading ones padded with 1)
  uint sab[4], sbb[4];      // A's and B's element strides along them (0: broadcast)
  uint sym;                 // Y's row stride (0: N, dense)
  uint syb[4];              // Y's batch strides when sym is set
} pc;

const uint BM = 128, BN = 128, BK = 8;
shared vec4 As[BK][BM / 4 + 1];
shared vec4 Bs[BK][BN / 4 + 1];

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 16, ty = tid / 16;
  uint batch = pc.batch_base + gl_WorkGroupID.z;
  uint rest = batch, oa = 0, ob = 0, oy = 0;
  for (int d = 3; d >= 0; --d) {
    uint i = rest % pc.bdims[d];
    rest /= pc.bdims[d];
    oa += i * pc.sab[d];
    ob += i * pc.sbb[d];
    oy += i * pc.syb[d];
  }
  uint m0 = (pc.mtile_base + gl_WorkGroupID.y) * BM, n0 = gl_WorkGroupID.x * BN;
  vec4 acc[8][2];
  for (int i = 0; i < 8; ++i) acc[i][0] = acc[i][1] = vec4(0);

  for (uint k0 = 0; k0 < pc.K; k0 += BK) {
    // 1024 elements of each tile, 4 per thread, consecutive threads along
    // the operand's unit-stride index so global reads coalesce.
    for (uint r = 0; r < 4; ++r) {
      uint e = tid + 256 * r;
      uint mm = A_KCONTIG != 0 ? e / BK : e % BM;
      uint ka = A_KCONTIG != 0 ? e % BK : e / BM;
      uint gm = m0 + mm, gka = k0 + ka;
      As[ka][mm / 4][mm % 4] = (gm < pc.M && gka < pc.K) ? LD(a[oa + gm * pc.sam + gka * pc.sak]) : 0.0;
      uint nn = B_NCONTIG != 0 ? e % BN : e / BK;
      uint kb = B_NCONTIG != 0 ? e / BN : e % BK;
      uint gn = n0 + nn, gkb = k0 + kb;
      Bs[kb][nn / 4][nn % 4] = (gn < pc.N && gkb < pc.K) ? LD(b[ob + gkb * pc.sbk + gn * pc.sbn]) : 0.0;
    }
    barrier();
    for (uint k = 0; k < BK; ++k) {
      vec4 a0 = As[k][ty], a1 = As[k][ty + 16];
      vec4 b0 = Bs[k][tx], b1 = Bs[k][tx + 16];
      acc[0][0] += a0.x * b0; acc[0][1] += a0.x * b1;
      acc[1][0] += a0.y * b0; acc[1][1] += a0.y * b1;
      acc[2][0] += a0.z * b0; acc[2][1] += a0.z * b1;
      acc[3][0] += a0.w * b0; acc[3][1] += a0.w * b1;
      acc[4][0] += a1.x * b0; acc[4][1] += a1.x * b1;
      acc[5][0] += a1.y * b0; acc[5][1] += a1.y * b1;
      acc[6][0] += a1.z * b0; acc[6][1] += a1.z * b1;
      acc[7][0] += a1.w * b0; acc[7][1] += a1.w * b1;
    }
    barrier();
  }

  uint ybase = pc.sym == 0 ? batch * pc.M * pc.N : oy;
  uint ystride = pc.sym == 0 ? pc.N : pc.sym;
  for (uint i = 0; i < 8; ++i) {
    uint gm = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
    if (gm >= pc.M) continue;
    for (uint h = 0; h < 2; ++h)
      for (uint j = 0; j < 4; ++j) {
        uint gn = n0 + h * 64 + tx * 4 + j;
        if (gn >= pc.N) continue;
        float v = pc.alpha * acc[i][h][j];
        if (HAS_C != 0) v += pc.beta * LD(c[gm * pc.scm + gn * pc.scn]);
        uint yi = ybase + gm * ystride + gn;
        v = activate(ACT, v, pc.act_a, pc.act_b);
        if (HAS_R != 0) v += LD(r[yi]);
        y[yi] = ST(v);
      }
  }
}

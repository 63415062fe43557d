#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// gemm.comp on tensor cores (VK_NV_cooperative_matrix; float16 runs only,
// where A and B are stored as float16 already): the same push constants,
// specialization constants and bindings, on 128x128 output tiles (the host
// sizes the grid by gemm_tile()). Eight subgroups of 32 each own a 32x64
// block as 2x4 16x16 float32 accumulators; K goes in chunks of 32 staged in
// shared memory through the same strided loads as gemm.comp. Each subgroup
// then passes its blocks, one 16x16 at a time, through its own corner of
// shared memory to the same epilogue (alpha, C, activation, residual, strides).
// Opt-in (KESTREL_COOPMAT=on): correct on the H200 (the backend parity
// harness and the family tests pass with it) but 3x slower than gemm.comp
// there so far (BENCHMARKS.md): the one-half-at-a-time staging bounds it.
#include "common.glsl"
#include "activation.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int ACT = 0;
layout(constant_id = 1) const int A_KCONTIG = 1;
layout(constant_id = 2) const int B_NCONTIG = 1;
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
  uint sam, sak, sbk, sbn;
  uint scm, scn;
  float alpha, beta, act_a, act_b;
  uint bdims[4];
  uint sab[4], sbb[4];
  uint sym;
  uint syb[4];
} pc;

const uint BM = 128, BN = 128, BK = 32;
// Row strides padded by 8 halves: rows stay 16-byte aligned and spread over the banks.
const uint AS = BK + 8, BS = BN + 8;
shared float16_t As[BM * AS];   // [m][k]
shared float16_t Bs[BK * BS];   // [k][n]
shared float Ws[8 * 256];       // one 16x16 block per subgroup, for the epilogue

void main() {
  uint tid = gl_LocalInvocationID.x;
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
  uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;  // 8 subgroups of 32
  uint wm = (sg / 2) * 32, wn = (sg % 2) * 64;
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[2][4];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

  for (uint k0 = 0; k0 < pc.K; k0 += BK) {
    // 4096 elements of each tile, 16 per thread, consecutive threads along
    // the operand's unit-stride index so global reads coalesce.
    for (uint r = 0; r < 16; ++r) {
      uint e = tid + 256 * r;
      uint mm = A_KCONTIG != 0 ? e / BK : e % BM;
      uint ka = A_KCONTIG != 0 ? e % BK : e / BM;
      uint gm = m0 + mm, gka = k0 + ka;
      As[mm * AS + ka] = float16_t((gm < pc.M && gka < pc.K) ? LD(a[oa + gm * pc.sam + gka * pc.sak]) : 0.0);
      uint nn = B_NCONTIG != 0 ? e % BN : e / BK;
      uint kb = B_NCONTIG != 0 ? e / BN : e % BK;
      uint gn = n0 + nn, gkb = k0 + kb;
      Bs[kb * BS + nn] = float16_t((gn < pc.N && gkb < pc.K) ? LD(b[ob + gkb * pc.sbk + gn * pc.sbn]) : 0.0);
    }
    barrier();
    for (uint kk = 0; kk < BK; kk += 16) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[2], fb[4];
      for (int i = 0; i < 2; ++i) coopMatLoadNV(fa[i], As, (wm + i * 16) * AS + kk, AS, false);
      for (int j = 0; j < 4; ++j) coopMatLoadNV(fb[j], Bs, kk * BS + wn + j * 16, BS, false);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
    barrier();
  }

  uint ybase = pc.sym == 0 ? batch * pc.M * pc.N : oy;
  uint ystride = pc.sym == 0 ? pc.N : pc.sym;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      coopMatStoreNV(acc[i][j], Ws, sg * 256, 16, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint t = 0; t < 8; ++t) {
        uint e = lane + 32 * t;
        uint gm = m0 + wm + i * 16 + e / 16, gn = n0 + wn + j * 16 + e % 16;
        if (gm >= pc.M || gn >= pc.N) continue;
        float v = pc.alpha * Ws[sg * 256 + e];
        if (HAS_C != 0) v += pc.beta * LD(c[gm * pc.scm + gn * pc.scn]);
        uint yi = ybase + gm * ystride + gn;
        v = activate(ACT, v, pc.act_a, pc.act_b);
        if (HAS_R != 0) v += LD(r[yi]);
        y[yi] = ST(v);
      }
      subgroupBarrier();
    }
}

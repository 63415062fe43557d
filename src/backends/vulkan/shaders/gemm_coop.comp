#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// gemm_body.glsl's GEMM on tensor cores (VK_KHR_cooperative_matrix, float16
// runs only: A and B are float16 in memory, products accumulate in float32),
// with the same push constants, specialization constants 0-4 and bindings.
// 128x128 output tiles (the host sizes the grid by the tile): eight subgroups
// of 32, two along m and four along n, each owning a 64x32 block as 4x2
// 16x16 float32 accumulators. K goes in chunks of 32 through two
// shared-memory stages: while the subgroups multiply out of one, the next
// chunk's global loads are in flight into registers; one barrier per chunk.
// A thread loads 8 consecutive halves of an operand's unit-stride rows per
// item, at once where the rows are 16-byte aligned (A_VEC, B_VEC, set by the
// host), else one by one. The epilogue (alpha, C,
// activation, residual, Y's strides) passes each accumulator through the
// subgroup's own 16x16 corner of shared memory.
#include "common.glsl"
#include "activation.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int ACT = 0;
layout(constant_id = 1) const int A_KCONTIG = 1;
layout(constant_id = 2) const int B_NCONTIG = 1;
layout(constant_id = 3) const int HAS_C = 0;
layout(constant_id = 4) const int HAS_R = 0;
layout(constant_id = 5) const int A_VEC = 0;
layout(constant_id = 6) const int B_VEC = 0;
layout(std430, binding = 0) readonly buffer A_ { T a[]; };
layout(std430, binding = 1) readonly buffer B_ { T b[]; };
layout(std430, binding = 2) readonly buffer C_ { T c[]; };
layout(std430, binding = 3) buffer Y_ { T y[]; };
layout(std430, binding = 4) readonly buffer R_ { T r[]; };
// The same A and B, 16 bytes at a time (A_VEC, B_VEC).
layout(std430, binding = 0) readonly buffer A4_ { uvec4 a4[]; };
layout(std430, binding = 1) readonly buffer B4_ { uvec4 b4[]; };
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
// Shared memory holds each operand as uvec4s of 8 halves, laid out like the
// operand's memory: rows along its unit-stride index, so a thread's 16-byte
// global load is one 16-byte shared store, and the cooperative-matrix loads
// read row-major or column-major to match. A k-major operand (A_KCONTIG,
// or B not B_NCONTIG) has 128 rows of 32 halves; an m- or n-major one 32
// rows of 128. Rows are padded by one uvec4, so they start 16-byte aligned
// and spread over the banks. Strides and offsets below count uvec4s.
const uint KROW = BK / 8 + 1, WROW = BN / 8 + 1;  // a row of a k-major and of an m/n-major layout
const uint STAGE = BM * KROW;                     // >= BK * WROW: either layout fits a stage
shared uvec4 As[2 * STAGE];
shared uvec4 Bs[2 * STAGE];
shared float Ws[8 * 256];  // one 16x16 block per subgroup, for the epilogue

#ifdef KESTREL_F16
const bool VEC_BUILD = true;  // 8 halves to a uvec4 in memory too
#else
const bool VEC_BUILD = false;  // float32 storage never runs this kernel; only the element path is built
#endif

uint oa, ob, m0, n0;
uvec4 va[2], vb[2];  // the next chunk: 512 uvec4 of each operand, 2 per thread

// Eight consecutive elements of a row packed as halves, each read on its own
// (rows not 16-byte aligned); `n` of them are in range, the rest are zero.
uvec4 gather_a(uint at, uint step, uint n) {
  float v[8];
  [[unroll]] for (uint h = 0; h < 8; ++h) v[h] = h < n ? LD(a[at + h * step]) : 0.0;
  return uvec4(packFloat2x16(f16vec2(v[0], v[1])), packFloat2x16(f16vec2(v[2], v[3])),
               packFloat2x16(f16vec2(v[4], v[5])), packFloat2x16(f16vec2(v[6], v[7])));
}
uvec4 gather_b(uint at, uint step, uint n) {
  float v[8];
  [[unroll]] for (uint h = 0; h < 8; ++h) v[h] = h < n ? LD(b[at + h * step]) : 0.0;
  return uvec4(packFloat2x16(f16vec2(v[0], v[1])), packFloat2x16(f16vec2(v[2], v[3])),
               packFloat2x16(f16vec2(v[4], v[5])), packFloat2x16(f16vec2(v[6], v[7])));
}

// Thread item i (0..511) of a chunk: the row it fills and which uvec4 of it.
// k-major: 128 rows of 4; m/n-major: 32 rows of 16.
uint row_of(bool kmajor, uint i) { return kmajor ? i / 4 : i / 16; }
uint col_of(bool kmajor, uint i) { return kmajor ? i % 4 : i % 16; }

void load_chunk(uint k0) {
  uint tid = gl_LocalInvocationID.x;
  const bool ak = A_KCONTIG != 0, bk = B_NCONTIG == 0;
  [[unroll]] for (uint r = 0; r < 2; ++r) {
    uint i = tid + 256 * r;
    uint row = row_of(ak, i), col8 = col_of(ak, i) * 8;
    uint gm = m0 + (ak ? row : col8), gk = k0 + (ak ? col8 : row);
    if (VEC_BUILD && A_VEC != 0) {
      va[r] = (gm < pc.M && gk < pc.K) ? a4[(oa + gm * pc.sam + gk * pc.sak) / 8] : uvec4(0);
    } else {
      bool inside = ak ? gm < pc.M : gk < pc.K;
      uint n = !inside ? 0 : ak ? min(8u, pc.K - min(gk, pc.K)) : min(8u, pc.M - min(gm, pc.M));
      va[r] = gather_a(oa + gm * pc.sam + gk * pc.sak, ak ? pc.sak : pc.sam, n);
    }
    row = row_of(bk, i);
    col8 = col_of(bk, i) * 8;
    uint gn = n0 + (bk ? row : col8);
    gk = k0 + (bk ? col8 : row);
    if (VEC_BUILD && B_VEC != 0) {
      vb[r] = (gn < pc.N && gk < pc.K) ? b4[(ob + gk * pc.sbk + gn * pc.sbn) / 8] : uvec4(0);
    } else {
      bool inside = bk ? gn < pc.N : gk < pc.K;
      uint n = !inside ? 0 : bk ? min(8u, pc.K - min(gk, pc.K)) : min(8u, pc.N - min(gn, pc.N));
      vb[r] = gather_b(ob + gk * pc.sbk + gn * pc.sbn, bk ? pc.sbk : pc.sbn, n);
    }
  }
}

void store_chunk(uint s) {
  uint tid = gl_LocalInvocationID.x;
  const bool ak = A_KCONTIG != 0, bk = B_NCONTIG == 0;
  [[unroll]] for (uint r = 0; r < 2; ++r) {
    uint i = tid + 256 * r;
    As[s * STAGE + row_of(ak, i) * (ak ? KROW : WROW) + col_of(ak, i)] = va[r];
    Bs[s * STAGE + row_of(bk, i) * (bk ? KROW : WROW) + col_of(bk, i)] = vb[r];
  }
}

void main() {
  uint batch = pc.batch_base + gl_WorkGroupID.z;
  uint rest = batch, oy = 0;
  oa = 0;
  ob = 0;
  for (int d = 3; d >= 0; --d) {
    uint i = rest % pc.bdims[d];
    rest /= pc.bdims[d];
    oa += i * pc.sab[d];
    ob += i * pc.sbb[d];
    oy += i * pc.syb[d];
  }
  m0 = (pc.mtile_base + gl_WorkGroupID.y) * BM;
  n0 = gl_WorkGroupID.x * BN;
  uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;  // 8 subgroups of 32
  uint wm = (sg / 4) * 64, wn = (sg % 4) * 32;
  coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[4][2];
  [[unroll]] for (int i = 0; i < 4; ++i)
    [[unroll]] for (int j = 0; j < 2; ++j) acc[i][j] = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);

  uint chunks = (pc.K + BK - 1) / BK;
  load_chunk(0);
  store_chunk(0);
  barrier();
  for (uint t = 0; t < chunks; ++t) {
    uint s = t & 1;
    if (t + 1 < chunks) load_chunk((t + 1) * BK);
    [[unroll]] for (uint kk = 0; kk < BK; kk += 16) {
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> fa[4];
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> fb[2];
      [[unroll]] for (uint i = 0; i < 4; ++i) {
        uint m = wm + i * 16;
        if (A_KCONTIG != 0)
          coopMatLoad(fa[i], As, s * STAGE + m * KROW + kk / 8, KROW, gl_CooperativeMatrixLayoutRowMajor);
        else
          coopMatLoad(fa[i], As, s * STAGE + kk * WROW + m / 8, WROW, gl_CooperativeMatrixLayoutColumnMajor);
      }
      [[unroll]] for (uint j = 0; j < 2; ++j) {
        uint n = wn + j * 16;
        if (B_NCONTIG != 0)
          coopMatLoad(fb[j], Bs, s * STAGE + kk * WROW + n / 8, WROW, gl_CooperativeMatrixLayoutRowMajor);
        else
          coopMatLoad(fb[j], Bs, s * STAGE + n * KROW + kk / 8, KROW, gl_CooperativeMatrixLayoutColumnMajor);
      }
      [[unroll]] for (uint i = 0; i < 4; ++i)
        [[unroll]] for (uint j = 0; j < 2; ++j) acc[i][j] = coopMatMulAdd(fa[i], fb[j], acc[i][j]);
    }
    if (t + 1 < chunks) store_chunk(s ^ 1);
    barrier();
  }

  uint ybase = pc.sym == 0 ? batch * pc.M * pc.N : oy;
  uint ystride = pc.sym == 0 ? pc.N : pc.sym;
  // Each lane finishes half a row of the 16x16 block: 8 consecutive outputs.
  uint row = lane / 2, col0 = (lane % 2) * 8;
  [[unroll]] for (int i = 0; i < 4; ++i)
    [[unroll]] for (int j = 0; j < 2; ++j) {
      coopMatStore(acc[i][j], Ws, sg * 256, 16, gl_CooperativeMatrixLayoutRowMajor);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      uint gm = m0 + wm + i * 16 + row;
      if (gm < pc.M)
        [[unroll]] for (uint q = 0; q < 8; ++q) {
          uint gn = n0 + wn + j * 16 + col0 + q;
          if (gn >= pc.N) break;
          float v = pc.alpha * Ws[sg * 256 + row * 16 + col0 + q];
          if (HAS_C != 0) v += pc.beta * LD(c[gm * pc.scm + gn * pc.scn]);
          uint yi = ybase + gm * ystride + gn;
          v = activate(ACT, v, pc.act_a, pc.act_b);
          if (HAS_R != 0) v += LD(r[yi]);
          y[yi] = ST(v);
        }
      subgroupBarrier();
    }
}

// gemm_body.glsl's GEMM on tensor cores (VK_KHR_cooperative_matrix, float16
// runs only: A and B are float16 in memory, products accumulate in float32),
// with the same push constants, specialization constants 0-4 and bindings,
// written once for two tiles: gemm_coop.comp (128x128) and
// gemm_coop_small.comp (64x64, for products too small to fill a large GPU
// with the larger tile). The including file defines BM (= BN), the subgroups'
// grid WARPS_M x WARPS_N (GEMM_THREADS / 32 subgroups of 32: 8 unless it
// defines GEMM_THREADS) and each subgroup's block of
// FM x FN 16x16 float32 accumulators. K goes in chunks of 32 through two
// shared-memory stages: while the subgroups multiply out of one, the next
// chunk's global loads are in flight into registers; one barrier per chunk.
// A thread loads 8 consecutive halves of an operand's unit-stride rows per
// item, at once where the rows are 16-byte aligned (A_VEC, B_VEC, set by the
// host), else one by one. The epilogue (alpha, C, activation, residual, Y's
// strides) passes each accumulator through the subgroup's own 16x16 corner of
// shared memory. Every loop over cooperative matrices is unrolled: where one
// is not, the NVIDIA compiler keeps the matrices in memory (4x slower).
#include "gemm_interface.glsl"
layout(constant_id = 5) const int A_VEC = 0;
layout(constant_id = 6) const int B_VEC = 0;
// The same A and B, 16 bytes at a time (A_VEC, B_VEC).
layout(std430, binding = 0) readonly buffer A4_ { uvec4 a4[]; };
layout(std430, binding = 1) readonly buffer B4_ { uvec4 b4[]; };

const uint BN = BM, BK = 32;
const uint ITEMS = BM * BK / 8 / GEMM_THREADS;  // uvec4s of each operand a thread loads per chunk
// Shared memory holds each operand as uvec4s of 8 halves, laid out like the
// operand's memory: rows along its unit-stride index, so a thread's 16-byte
// global load is one 16-byte shared store, and the cooperative-matrix loads
// read row-major or column-major to match. A k-major operand (A_KCONTIG,
// or B not B_NCONTIG) has 128 rows of 32 halves; an m- or n-major one 32
// rows of 128. Rows are padded by one uvec4, so they start 16-byte aligned
// and spread over the banks. Strides and offsets below count uvec4s.
const uint KROW = BK / 8 + 1, WROW = BN / 8 + 1;  // a row of a k-major and of an m/n-major layout
const uint STAGE = BM * KROW;                     // >= BK * WROW (BM of 64 and 128): either layout fits
shared uvec4 As[2 * STAGE];
shared uvec4 Bs[2 * STAGE];
shared float Ws[GEMM_THREADS / 32 * 256];  // one 16x16 block per subgroup, for the epilogue

#ifdef KESTREL_F16
const bool VEC_BUILD = true;  // 8 halves to a uvec4 in memory too
#else
const bool VEC_BUILD = false;  // float32 storage never runs this kernel; only the element path is built
#endif

uint oa, ob, m0, n0;
uvec4 va[ITEMS], vb[ITEMS];  // the next chunk of each operand

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

// Thread item i (0 .. BM*BK/8 - 1) of a chunk: the row it fills and which
// uvec4 of it. k-major: BM rows of BK/8; m/n-major: BK rows of BM/8.
uint row_of(bool kmajor, uint i) { return kmajor ? i / (BK / 8) : i / (BM / 8); }
uint col_of(bool kmajor, uint i) { return kmajor ? i % (BK / 8) : i % (BM / 8); }

void load_chunk(uint k0) {
  uint tid = gl_LocalInvocationID.x;
  const bool ak = A_KCONTIG != 0, bk = B_NCONTIG == 0;
  [[unroll]] for (uint r = 0; r < ITEMS; ++r) {
    uint i = tid + GEMM_THREADS * r;
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
  [[unroll]] for (uint r = 0; r < ITEMS; ++r) {
    uint i = tid + GEMM_THREADS * r;
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
  uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;  // GEMM_THREADS / 32 subgroups of 32
  uint wm = (sg / WARPS_N) * (16 * FM), wn = (sg % WARPS_N) * (16 * FN);
  coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[FM][FN];
  [[unroll]] for (int i = 0; i < FM; ++i)
    [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);

  uint chunks = (pc.K + BK - 1) / BK;
  load_chunk(0);
  store_chunk(0);
  barrier();
  for (uint t = 0; t < chunks; ++t) {
    uint s = t & 1;
    if (t + 1 < chunks) load_chunk((t + 1) * BK);
    [[unroll]] for (uint kk = 0; kk < BK; kk += 16) {
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> fa[FM];
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> fb[FN];
      [[unroll]] for (uint i = 0; i < FM; ++i) {
        uint m = wm + i * 16;
        if (A_KCONTIG != 0)
          coopMatLoad(fa[i], As, s * STAGE + m * KROW + kk / 8, KROW, gl_CooperativeMatrixLayoutRowMajor);
        else
          coopMatLoad(fa[i], As, s * STAGE + kk * WROW + m / 8, WROW, gl_CooperativeMatrixLayoutColumnMajor);
      }
      [[unroll]] for (uint j = 0; j < FN; ++j) {
        uint n = wn + j * 16;
        if (B_NCONTIG != 0)
          coopMatLoad(fb[j], Bs, s * STAGE + kk * WROW + n / 8, WROW, gl_CooperativeMatrixLayoutRowMajor);
        else
          coopMatLoad(fb[j], Bs, s * STAGE + n * KROW + kk / 8, KROW, gl_CooperativeMatrixLayoutColumnMajor);
      }
      [[unroll]] for (uint i = 0; i < FM; ++i)
        [[unroll]] for (uint j = 0; j < FN; ++j) acc[i][j] = coopMatMulAdd(fa[i], fb[j], acc[i][j]);
    }
    if (t + 1 < chunks) store_chunk(s ^ 1);
    barrier();
  }

  uint ybase = pc.sym == 0 ? batch * pc.M * pc.N : oy;
  uint ystride = pc.sym == 0 ? pc.N : pc.sym;
  // Each lane finishes half a row of the 16x16 block: 8 consecutive outputs.
  uint row = lane / 2, col0 = (lane % 2) * 8;
  [[unroll]] for (int i = 0; i < FM; ++i)
    [[unroll]] for (int j = 0; j < FN; ++j) {
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
          y[yi] = TS(v);
        }
      subgroupBarrier();
    }
}

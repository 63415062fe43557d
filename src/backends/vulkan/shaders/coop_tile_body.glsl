// The tensor-core product of one output tile, written once for the GEMM
// (gemm_coop_body.glsl) and the convolution (conv_coop.comp):
//   Y[m, n] = sum_k A[m, k] B[k, n]   over this workgroup's BM x BN tile,
// float16 operands (VK_KHR_cooperative_matrix), float32 accumulators; or,
// where the includer defines COOP_INT8 first (gemm_integer_coop.comp), int8
// operands and exact int32 accumulators. Below, "an element" is a half or a
// byte, and COOP_EPV of them fill a uvec4 (8 halves, 16 bytes).
//
// The including file declares the workgroup (GEMM_THREADS threads, subgroups
// of 32) and, before including this:
//   const uint BM, BN, WARPS_N, FM, FN  the tile (each side 32 to 128, a
//       multiple of 32), the subgroups' grid (GEMM_THREADS / 32 of them,
//       WARPS_N along n), each subgroup's block of FM x FN 16x16
//       accumulators: BM = GEMM_THREADS / 32 / WARPS_N * 16 * FM and
//       BN = WARPS_N * 16 * FN;
//   const bool A_KMAJOR, B_KMAJOR  whether an operand is staged as rows along
//       k (else along m for A, along n for B), as its memory runs;
//   uint coop_M, coop_N, coop_K, m0, n0  the problem and the tile's origin,
//       set before coop_tile_run();
//   uvec4 coop_load_a(uint gm, uint gk), uvec4 coop_load_b(uint gk, uint gn)
//       COOP_EPV elements of an operand from (gm, gk) / (gk, gn) on, along k
//       where the operand is k-major, else along m / n; zero outside the
//       problem;
//   void coop_store8(uint gm, uint gn, COOP_ACC v[8])  writes outputs (gm, gn)
//       to (gm, gn + 7), those inside coop_N (called with gm < coop_M and gn
//       a multiple of 8 inside coop_N).
//
// K goes in chunks of 4 uvec4s (32 halves, 64 bytes) through two
// shared-memory stages: while the
// subgroups multiply out of one, the next chunk's loads are in flight into
// registers; one barrier per chunk. The epilogue passes each accumulator
// through the subgroup's own 16x16 corner of shared memory. Every loop over
// cooperative matrices is unrolled: where one is not, the NVIDIA compiler
// keeps the matrices in memory (4x slower).
#ifdef COOP_INT8
#define COOP_EPV 16u  // bytes to a uvec4
#define COOP_KF 32u   // a fragment's k: 16x32 int8 times 32x16 int8
#define COOP_OPERAND int8_t
#define COOP_ACC int
#else
#define COOP_EPV 8u
#define COOP_KF 16u
#define COOP_OPERAND float16_t
#define COOP_ACC float
#endif
const uint BK = 4 * COOP_EPV;
// uvec4s of A and of B a thread loads per chunk
const uint ITEMS_A = BM * BK / COOP_EPV / GEMM_THREADS, ITEMS_B = BN * BK / COOP_EPV / GEMM_THREADS;
// Shared memory holds each operand as uvec4s of COOP_EPV elements, laid out
// like the operand's loads: rows along the index the elements run, so a
// thread's 16-byte load is one 16-byte shared store, and the
// cooperative-matrix loads read row-major or column-major to match. A
// k-major operand has BM rows of BK elements; an m- or n-major one BK rows of
// BM. Rows are padded by one uvec4, so they start 16-byte aligned and spread
// over the banks. Strides and offsets below count uvec4s.
const uint KROW = BK / COOP_EPV + 1;  // a row of a k-major layout
const uint WROW_A = BM / COOP_EPV + 1, WROW_B = BN / COOP_EPV + 1;  // and of an m- or n-major one
// A stage: BM (BN) rows of KROW >= BK rows of WROW_A (WROW_B) for sides of
// 32 and more, so either layout fits.
const uint STAGE_A = BM * KROW, STAGE_B = BN * KROW;
shared uvec4 As[2 * STAGE_A];
shared uvec4 Bs[2 * STAGE_B];
shared COOP_ACC Ws[GEMM_THREADS / 32 * 256];  // one 16x16 block per subgroup, for the epilogue

uvec4 va[ITEMS_A], vb[ITEMS_B];  // the next chunk of each operand

// Thread item i of a chunk of an operand whose tile side is `side`: the row
// it fills and which uvec4 of it. k-major: side rows of BK/COOP_EPV;
// m/n-major: BK rows of side/COOP_EPV.
uint row_of(bool kmajor, uint side, uint i) { return kmajor ? i / (BK / COOP_EPV) : i / (side / COOP_EPV); }
uint col_of(bool kmajor, uint side, uint i) { return kmajor ? i % (BK / COOP_EPV) : i % (side / COOP_EPV); }

void load_chunk(uint k0) {
  uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint r = 0; r < ITEMS_A; ++r) {
    uint i = tid + GEMM_THREADS * r;
    uint row = row_of(A_KMAJOR, BM, i), col8 = col_of(A_KMAJOR, BM, i) * COOP_EPV;
    va[r] = coop_load_a(m0 + (A_KMAJOR ? row : col8), k0 + (A_KMAJOR ? col8 : row));
  }
  [[unroll]] for (uint r = 0; r < ITEMS_B; ++r) {
    uint i = tid + GEMM_THREADS * r;
    uint row = row_of(B_KMAJOR, BN, i), col8 = col_of(B_KMAJOR, BN, i) * COOP_EPV;
    vb[r] = coop_load_b(k0 + (B_KMAJOR ? col8 : row), n0 + (B_KMAJOR ? row : col8));
  }
}

void store_chunk(uint s) {
  uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint r = 0; r < ITEMS_A; ++r) {
    uint i = tid + GEMM_THREADS * r;
    As[s * STAGE_A + row_of(A_KMAJOR, BM, i) * (A_KMAJOR ? KROW : WROW_A) + col_of(A_KMAJOR, BM, i)] = va[r];
  }
  [[unroll]] for (uint r = 0; r < ITEMS_B; ++r) {
    uint i = tid + GEMM_THREADS * r;
    Bs[s * STAGE_B + row_of(B_KMAJOR, BN, i) * (B_KMAJOR ? KROW : WROW_B) + col_of(B_KMAJOR, BN, i)] = vb[r];
  }
}

void coop_tile_run() {
  uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;  // GEMM_THREADS / 32 subgroups of 32
  uint wm = (sg / WARPS_N) * (16 * FM), wn = (sg % WARPS_N) * (16 * FN);
  coopmat<COOP_ACC, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[FM][FN];
  [[unroll]] for (int i = 0; i < FM; ++i)
    [[unroll]] for (int j = 0; j < FN; ++j)
      acc[i][j] = coopmat<COOP_ACC, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(COOP_ACC(0));

  uint chunks = (coop_K + BK - 1) / BK;
  load_chunk(0);
  store_chunk(0);
  barrier();
  for (uint t = 0; t < chunks; ++t) {
    uint s = t & 1;
    if (t + 1 < chunks) load_chunk((t + 1) * BK);
    [[unroll]] for (uint kk = 0; kk < BK; kk += COOP_KF) {
      coopmat<COOP_OPERAND, gl_ScopeSubgroup, 16, COOP_KF, gl_MatrixUseA> fa[FM];
      coopmat<COOP_OPERAND, gl_ScopeSubgroup, COOP_KF, 16, gl_MatrixUseB> fb[FN];
      [[unroll]] for (uint i = 0; i < FM; ++i) {
        uint m = wm + i * 16;
        if (A_KMAJOR)
          coopMatLoad(fa[i], As, s * STAGE_A + m * KROW + kk / COOP_EPV, KROW, gl_CooperativeMatrixLayoutRowMajor);
        else
          coopMatLoad(fa[i], As, s * STAGE_A + kk * WROW_A + m / COOP_EPV, WROW_A,
                      gl_CooperativeMatrixLayoutColumnMajor);
      }
      [[unroll]] for (uint j = 0; j < FN; ++j) {
        uint n = wn + j * 16;
        if (!B_KMAJOR)
          coopMatLoad(fb[j], Bs, s * STAGE_B + kk * WROW_B + n / COOP_EPV, WROW_B,
                      gl_CooperativeMatrixLayoutRowMajor);
        else
          coopMatLoad(fb[j], Bs, s * STAGE_B + n * KROW + kk / COOP_EPV, KROW, gl_CooperativeMatrixLayoutColumnMajor);
      }
      [[unroll]] for (uint i = 0; i < FM; ++i)
        [[unroll]] for (uint j = 0; j < FN; ++j) acc[i][j] = coopMatMulAdd(fa[i], fb[j], acc[i][j]);
    }
    if (t + 1 < chunks) store_chunk(s ^ 1);
    barrier();
  }

  // Each lane finishes half a row of the 16x16 block: 8 consecutive outputs,
  // handed over together so the includer can store them as one 16-byte word.
  uint row = lane / 2, col0 = (lane % 2) * 8;
  [[unroll]] for (int i = 0; i < FM; ++i)
    [[unroll]] for (int j = 0; j < FN; ++j) {
      coopMatStore(acc[i][j], Ws, sg * 256, 16, gl_CooperativeMatrixLayoutRowMajor);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      uint gm = m0 + wm + i * 16 + row, gn = n0 + wn + j * 16 + col0;
      COOP_ACC v[8];
      [[unroll]] for (uint q = 0; q < 8; ++q) v[q] = Ws[sg * 256 + row * 16 + col0 + q];
      subgroupBarrier();
      if (gm < coop_M && gn < coop_N) coop_store8(gm, gn, v);
    }
}

// The scalar GEMM, written once for two tile shapes (gemm.comp: 64x64 output
// tiles, 4x4 per thread, for CPU devices and mobile GPUs whose registers are
// few; gemm_large.comp: 128x128, 8x8 per thread, for desktop and datacenter
// GPUs). The including file defines BM (= BN), BK and TM (= TN, a multiple of
// 4): 256 threads as a 16x16 grid, each owning TM/4 x TM/4 blocks of 4x4
// spaced 64 apart, so a warp's shared-memory reads are broadcasts (A) or
// consecutive vec4s (B), free of bank conflicts.
//
// Y[b] = act(alpha * op(A[b]) op(B[b]) + beta * C) [+ R]. A and B are
// addressed through strides, so transposed operands and broadcast batches
// need no copies. gz walks the batch (decoded over up to 4 batch dims), gy
// the row tiles from mtile_base. Y is dense [batch, M, N] unless sym is set:
// then row stride sym and batch strides syb (a head's slice of a
// [tokens, heads * head_dim] matrix). R, read at Y's index, is a residual
// added last; it may be Y itself (in place).
//
// K goes in chunks of BK through two shared-memory stages: while the threads
// multiply out of one stage, the next chunk's global loads are in flight into
// registers, then stored into the other stage; one barrier per chunk.
#extension GL_EXT_control_flow_attributes : require
#include "gemm_interface.glsl"
// B is read through gemm_b: its elements, or (NBITS_WEIGHTS, the _nbits
// variants) MatMulNBits' 4-bit blocks dequantized as they load.
#ifdef NBITS_WEIGHTS
#include "nbits_weights.glsl"
#define gemm_b(gk, gn) nbits_weight(gk, gn)
#else
#define gemm_b(gk, gn) ((gn) < pc.N && (gk) < pc.K ? LD(b[ob + (gk) * pc.sbk + (gn) * pc.sbn]) : 0.0)
#endif

const uint BN = BM;
const uint SUB = TM / 4;                  // 4x4 blocks per thread along each side
const uint LOADS = BM * BK / 256;         // elements of each operand a thread loads per chunk
// k-major tiles read as vec4 along m / n; one vec4 of padding spreads the
// transposing stores over the banks.
shared vec4 As[2][BK][BM / 4 + 1];
shared vec4 Bs[2][BK][BN / 4 + 1];

uint oa, ob;
uint m0, n0;
float ra[LOADS], rb[LOADS];

// Element e (0 .. BM*BK-1) of a chunk: consecutive threads take consecutive
// elements along each operand's unit-stride index, so global reads coalesce.
uint a_m(uint e) { return A_KCONTIG != 0 ? e / BK : e % BM; }
uint a_k(uint e) { return A_KCONTIG != 0 ? e % BK : e / BM; }
uint b_n(uint e) { return B_NCONTIG != 0 ? e % BN : e / BK; }
uint b_k(uint e) { return B_NCONTIG != 0 ? e / BN : e % BK; }

// Chunk k0's elements into registers.
void load_chunk(uint k0) {
  [[unroll]] for (uint r = 0; r < LOADS; ++r) {
    uint e = gl_LocalInvocationID.x + 256 * r;
    uint gm = m0 + a_m(e), gka = k0 + a_k(e);
    ra[r] = (gm < pc.M && gka < pc.K) ? LD(a[oa + gm * pc.sam + gka * pc.sak]) : 0.0;
    uint gn = n0 + b_n(e), gkb = k0 + b_k(e);
    rb[r] = gemm_b(gkb, gn);
  }
}

void store_chunk(uint s) {
  [[unroll]] for (uint r = 0; r < LOADS; ++r) {
    uint e = gl_LocalInvocationID.x + 256 * r;
    As[s][a_k(e)][a_m(e) / 4][a_m(e) % 4] = ra[r];
    Bs[s][b_k(e)][b_n(e) / 4][b_n(e) % 4] = rb[r];
  }
}

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 16, ty = tid / 16;
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
  vec4 acc[SUB][SUB][4];
  [[unroll]] for (uint i = 0; i < SUB; ++i)
    [[unroll]] for (uint j = 0; j < SUB; ++j)
      [[unroll]] for (uint q = 0; q < 4; ++q) acc[i][j][q] = vec4(0);

  uint chunks = (pc.K + BK - 1) / BK;
  load_chunk(0);
  store_chunk(0);
  barrier();
  for (uint t = 0; t < chunks; ++t) {
    uint s = t & 1;
    if (t + 1 < chunks) load_chunk((t + 1) * BK);
    [[unroll]] for (uint k = 0; k < BK; ++k) {
      vec4 av[SUB], bv[SUB];
      [[unroll]] for (uint i = 0; i < SUB; ++i) av[i] = As[s][k][ty + 16 * i];
      [[unroll]] for (uint j = 0; j < SUB; ++j) bv[j] = Bs[s][k][tx + 16 * j];
      [[unroll]] for (uint i = 0; i < SUB; ++i)
        [[unroll]] for (uint j = 0; j < SUB; ++j) {
          acc[i][j][0] += av[i].x * bv[j];
          acc[i][j][1] += av[i].y * bv[j];
          acc[i][j][2] += av[i].z * bv[j];
          acc[i][j][3] += av[i].w * bv[j];
        }
    }
    if (t + 1 < chunks) store_chunk(s ^ 1);
    barrier();
  }

  uint ybase = pc.sym == 0 ? batch * pc.M * pc.N : oy;
  uint ystride = pc.sym == 0 ? pc.N : pc.sym;
  [[unroll]] for (uint i = 0; i < SUB; ++i)
    [[unroll]] for (uint q = 0; q < 4; ++q) {
      uint gm = m0 + 64 * i + ty * 4 + q;
      if (gm >= pc.M) continue;
      [[unroll]] for (uint j = 0; j < SUB; ++j)
        [[unroll]] for (uint l = 0; l < 4; ++l) {
          uint gn = n0 + 64 * j + tx * 4 + l;
          if (gn >= pc.N) continue;
          float v = pc.alpha * acc[i][j][q][l];
          if (HAS_C != 0) v += pc.beta * LD(c[gm * pc.scm + gn * pc.scn]);
          uint yi = ybase + gm * ystride + gn;
          v = activate(ACT, v, pc.act_a, pc.act_b);
          if (HAS_R != 0) v += LD(r[yi]);
          y[yi] = TS(v);
        }
    }
}

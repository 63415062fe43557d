// gemm_body.glsl's GEMM on tensor cores (VK_KHR_cooperative_matrix, float16
// runs only: A and B are float16 in memory, products accumulate in float32),
// with the same push constants, specialization constants 0-4 and bindings,
// for three tiles: gemm_coop.comp (128x128), gemm_coop_small.comp (64x64)
// and gemm_coop_tiny.comp (32x32). The including file defines BM, WARPS_N,
// FM and FN (coop_tile_body.glsl, which holds the product) and, where it
// uses fewer than 256 threads, GEMM_THREADS. This file supplies the GEMM's
// operands and epilogue: a thread loads 8 consecutive halves of an operand's
// unit-stride rows per item, at once where the rows are 16-byte aligned
// (A_VEC, B_VEC, set by the host), else one by one; each output gets alpha,
// C, the activation and the residual, at Y's strides. A lane stores its 8
// consecutive outputs (and reads their residual) as 16-byte words where Y's
// rows allow (Y_VEC): one store instead of eight 2-byte ones, which on
// products of short K (SAM's and the ViTs' K = 768) is a visible share of
// the tile's time.
#include "gemm_interface.glsl"
#include "halves8.glsl"
layout(constant_id = 5) const int A_VEC = 0;
layout(constant_id = 6) const int B_VEC = 0;
layout(constant_id = 7) const int Y_VEC = 0;
// The same A and B, 16 bytes at a time (A_VEC, B_VEC).
layout(std430, binding = 0) readonly buffer A4_ { uvec4 a4[]; };
layout(std430, binding = 1) readonly buffer B4_ { uvec4 b4[]; };
// Y and R, 16 bytes at a time (Y_VEC): 8 halves, or 4 floats of a float32 stream.
layout(std430, binding = 3) buffer Y4_ { uvec4 y4[]; };
layout(std430, binding = 4) readonly buffer R4_ { uvec4 r4[]; };

#ifdef KESTREL_F16
const bool VEC_BUILD = true;  // 8 halves to a uvec4 in memory too
#else
const bool VEC_BUILD = false;  // float32 storage never runs this kernel; only the element path is built
#endif

const bool A_KMAJOR = A_KCONTIG != 0, B_KMAJOR = B_NCONTIG == 0;
uint coop_M, coop_N, coop_K, m0, n0;
uint oa, ob, ybase, ystride;  // this batch's A and B, and Y's

// Eight consecutive elements of a row packed as halves, each read on its own
// (rows not 16-byte aligned); `n` of them are in range, the rest are zero.
uvec4 gather_a(uint at, uint step, uint n) {
  float v[8];
  [[unroll]] for (uint h = 0; h < 8; ++h) v[h] = h < n ? LD(a[at + h * step]) : 0.0;
  return pack_halves8(v);
}
uvec4 gather_b(uint at, uint step, uint n) {
  float v[8];
  [[unroll]] for (uint h = 0; h < 8; ++h) v[h] = h < n ? LD(b[at + h * step]) : 0.0;
  return pack_halves8(v);
}

uvec4 coop_load_a(uint gm, uint gk) {
  uvec4 v;
  if (VEC_BUILD && A_VEC != 0) {
    v = (gm < pc.M && gk < pc.K) ? a4[(oa + gm * pc.sam + gk * pc.sak) / 8] : uvec4(0);
  } else {
    bool inside = A_KMAJOR ? gm < pc.M : gk < pc.K;
    uint n = !inside ? 0 : A_KMAJOR ? min(8u, pc.K - min(gk, pc.K)) : min(8u, pc.M - min(gm, pc.M));
    v = gather_a(oa + gm * pc.sam + gk * pc.sak, A_KMAJOR ? pc.sak : pc.sam, n);
  }
  return v;
}

#ifdef NBITS_WEIGHTS
// MatMulNBits' 4-bit blocks (the _nbits variants): B is k-major, and a
// chunk's 8 weights along k are one packed word, dequantized here.
#include "nbits_weights.glsl"
uvec4 coop_load_b(uint gk, uint gn) {
  float w[8];
  nbits_weights8(gk, gn, w);
  return pack_halves8(w);
}
#else
uvec4 coop_load_b(uint gk, uint gn) {
  uvec4 v;
  if (VEC_BUILD && B_VEC != 0) {
    v = (gn < pc.N && gk < pc.K) ? b4[(ob + gk * pc.sbk + gn * pc.sbn) / 8] : uvec4(0);
  } else {
    bool inside = B_KMAJOR ? gn < pc.N : gk < pc.K;
    uint n = !inside ? 0 : B_KMAJOR ? min(8u, pc.K - min(gk, pc.K)) : min(8u, pc.N - min(gn, pc.N));
    v = gather_b(ob + gk * pc.sbk + gn * pc.sbn, B_KMAJOR ? pc.sbk : pc.sbn, n);
  }
  return v;
}
#endif

float epilogue(uint gm, uint gn, float acc) {
  float v = pc.alpha * acc;
  if (HAS_C != 0) v += pc.beta * LD(c[gm * pc.scm + gn * pc.scn]);
  return activate(ACT, v, pc.act_a, pc.act_b);
}

void coop_store8(uint gm, uint gn, float acc[8]) {
  uint yi = ybase + gm * ystride + gn;
  if (VEC_BUILD && Y_VEC != 0) {  // the host checked: yi is a multiple of 8, gn + 7 < N or the row's padding
    float v[8];
    [[unroll]] for (uint q = 0; q < 8; ++q) v[q] = epilogue(gm, gn + q, acc[q]);
#ifdef KESTREL_FLOAT32_STREAM
    [[unroll]] for (uint h = 0; h < 2; ++h) {
      vec4 o = vec4(v[4 * h], v[4 * h + 1], v[4 * h + 2], v[4 * h + 3]);
      if (HAS_R != 0) o += uintBitsToFloat(r4[yi / 4 + h]);
      y4[yi / 4 + h] = floatBitsToUint(o);
    }
#else
    if (HAS_R != 0) {
      uvec4 rr = r4[yi / 8];
      [[unroll]] for (uint h = 0; h < 4; ++h) {
        vec2 r2 = vec2(unpackFloat2x16(rr[h]));
        v[2 * h] += r2.x;
        v[2 * h + 1] += r2.y;
      }
    }
    y4[yi / 8] = pack_halves8(v);
#endif
    return;
  }
  [[unroll]] for (uint q = 0; q < 8; ++q) {
    if (gn + q >= pc.N) break;
    float v = epilogue(gm, gn + q, acc[q]);
    if (HAS_R != 0) v += LD(r[yi + q]);
    y[yi + q] = TS(v);
  }
}

#include "coop_tile_body.glsl"

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
  ybase = pc.sym == 0 ? batch * pc.M * pc.N : oy;
  ystride = pc.sym == 0 ? pc.N : pc.sym;
  coop_M = pc.M, coop_N = pc.N, coop_K = pc.K;
  m0 = (pc.mtile_base + gl_WorkGroupID.y) * BM;
  n0 = gl_WorkGroupID.x * BN;
  coop_tile_run();
}

#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// Float convolution (any groups but depthwise) on tensor cores, float16
// runs: conv_gemm_body.glsl's implicit GEMM, per (batch, group),
//   Y[Mg, P] = W[Mg, K] * col(X)[K, P],  K = Cg*KH*KW, P = OH*OW,
// on 64x64 tiles of (output channels, pixels) (coop_tile_body.glsl: four
// subgroups of 32x32). W's rows load 16 bytes at a time where K is a
// multiple of 8 (W_VEC); col(X) is gathered 8 consecutive pixels of one k at
// a time, so neighbouring threads read neighbouring pixels. Bias and the
// fused activation apply at the store. Push constants as conv_gemm.comp's.
#include "common.glsl"
#include "activation.glsl"
#include "halves8.glsl"
#define GEMM_THREADS 128
layout(local_size_x = GEMM_THREADS) in;
layout(constant_id = 0) const int KH = 1;
layout(constant_id = 1) const int KW = 1;
layout(constant_id = 2) const int ACT = 0;
layout(constant_id = 3) const int HAS_BIAS = 0;
layout(constant_id = 4) const int W_VEC = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer Wt { T w[]; };
layout(std430, binding = 1) readonly buffer W4 { uvec4 w4[]; };
layout(std430, binding = 2) readonly buffer B { T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push {
  int H, W, OH, OW, SH, SW, DH, DW, PH, PW;
  int C, Cg, Mg, K, groups;
  int tile0;  // first pixel tile of this dispatch
  float a, b;  // activation parameters
} pc;

#ifdef KESTREL_F16
const bool VEC_BUILD = true;  // 8 halves to a uvec4 in memory too
#else
const bool VEC_BUILD = false;  // float32 storage never runs this kernel
#endif

const uint BM = 64, BN = 64, WARPS_N = 2, FM = 2, FN = 2;
const bool A_KMAJOR = true, B_KMAJOR = false;
const int KHW = KH * KW;
uint coop_M, coop_N, coop_K, m0, n0;
uint xbase, wbase, mbase, ybase;  // this (batch, group)'s input, weights, first channel, output

// Weights of output channel gm, k = gk .. gk + 7.
uvec4 coop_load_a(uint gm, uint gk) {
  uvec4 r;
  if (VEC_BUILD && W_VEC != 0) {
    r = (gm < coop_M && gk < coop_K) ? w4[(wbase + gm * coop_K + gk) / 8] : uvec4(0);
  } else {
    float v[8];
    [[unroll]] for (uint h = 0; h < 8; ++h)
      v[h] = gm < coop_M && gk + h < coop_K ? LD(w[wbase + gm * coop_K + gk + h]) : 0.0;
    r = pack_halves8(v);
  }
  return r;
}

// col(X) at k = gk, pixels gn .. gn + 7 (zero past the image's padding, the
// last pixel or the last k).
uvec4 coop_load_b(uint gk, uint gn) {
  float v[8];
  int c = int(gk) / KHW, rest = int(gk) - c * KHW;
  int kh = rest / KW, kw = rest - kh * KW;
  int oh = int(gn) / pc.OW, ow = int(gn) - oh * pc.OW;
  [[unroll]] for (uint h = 0; h < 8; ++h) {
    int ih = oh * pc.SH - pc.PH + kh * pc.DH, iw = ow * pc.SW - pc.PW + kw * pc.DW;
    bool in_image = ih >= 0 && ih < pc.H && iw >= 0 && iw < pc.W;
    v[h] = gk < coop_K && gn + h < coop_N && in_image ? LD(x[xbase + uint((c * pc.H + ih) * pc.W + iw)]) : 0.0;
    if (++ow == pc.OW) ow = 0, ++oh;  // the next pixel
  }
  return pack_halves8(v);
}

void coop_store8(uint gm, uint gn, float acc[8]) {
  float b = HAS_BIAS != 0 ? LD(bias[mbase + gm]) : 0.0;
  [[unroll]] for (uint q = 0; q < 8; ++q)
    if (gn + q < coop_N) y[ybase + gm * coop_N + gn + q] = ST(activate(ACT, acc[q] + b, pc.a, pc.b));
}

#include "coop_tile_body.glsl"

void main() {
  const uint z = gl_WorkGroupID.z;
  const uint n = z / uint(pc.groups), g = z % uint(pc.groups);
  coop_M = uint(pc.Mg);
  coop_N = uint(pc.OH * pc.OW);
  coop_K = uint(pc.K);
  xbase = (n * uint(pc.C) + g * uint(pc.Cg)) * uint(pc.H * pc.W);
  mbase = g * coop_M;
  wbase = mbase * coop_K;
  ybase = (n * uint(pc.groups) + g) * coop_M * coop_N;
  m0 = gl_WorkGroupID.y * BM;
  n0 = (gl_WorkGroupID.x + uint(pc.tile0)) * BN;
  coop_tile_run();
}

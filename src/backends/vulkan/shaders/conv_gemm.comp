#version 450
#extension GL_GOOGLE_include_directive : require
// Float convolution (any groups but depthwise) as a tiled implicit GEMM: see
// conv_gemm_body.glsl. Bias and the fused activation apply at the store.
#include "common.glsl"
#include "activation.glsl"
layout(constant_id = 4) const int ACT = 0;
layout(constant_id = 5) const int HAS_BIAS = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer Wt { T w[]; };
layout(std430, binding = 2) readonly buffer B { T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push {
  int H, W, OH, OW, SH, SW, DH, DW, PH, PW;
  int C, Cg, Mg, K, groups;
  int tile0;  // first pixel tile of this dispatch
  float a, b;  // activation parameters
} pc;

#define ACC_T float
#define LOAD_X(i) LD(x[i])
#define LOAD_W(i, m) LD(w[i])
#define MADD(a, b, acc) fma(a, b, acc)
#define STORE_Y(i, m, v) y[i] = ST(activate(ACT, (v) + (HAS_BIAS != 0 ? LD(bias[m]) : 0.0), pc.a, pc.b))
#include "conv_gemm_body.glsl"

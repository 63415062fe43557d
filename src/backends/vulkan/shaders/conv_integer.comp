#version 450
#extension GL_GOOGLE_include_directive : require
// ConvInteger: 8-bit input and weights (packed four to a word), zero points
// subtracted, exact int32 accumulation, int32 output. The tiling is the float
// kernel's (conv_gemm_body.glsl); padding contributes zero, as padding with
// the input's zero point does.
#include "common.glsl"
#include "packed_bytes.glsl"
layout(constant_id = 4) const int X_SIGNED = 0;
layout(constant_id = 5) const int W_SIGNED = 0;
layout(constant_id = 6) const int W_ZP_PER_CHANNEL = 0;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer Wt { uint w[]; };
layout(std430, binding = 2) readonly buffer XZ { uint x_zero_point[]; };
layout(std430, binding = 3) readonly buffer WZ { int w_zero_point[]; };
layout(std430, binding = 4) writeonly buffer Y { int y[]; };
layout(push_constant) uniform Push {
  int H, W, OH, OW, SH, SW, DH, DW, PH, PW;
  int C, Cg, Mg, K, groups;
  int tile0;
  int has_x_zero_point;
} pc;

int x_zp() { return pc.has_x_zero_point != 0 ? packed_byte(x_zero_point[0], 0, X_SIGNED != 0) : 0; }
int w_zp(int m) { return w_zero_point[W_ZP_PER_CHANNEL != 0 ? m : 0]; }

#define ACC_T int
#define LOAD_X(i) (packed_byte(x[(i) >> 2], (i), X_SIGNED != 0) - x_zp())
#define LOAD_W(i, m) (packed_byte(w[(i) >> 2], (i), W_SIGNED != 0) - w_zp(g * pc.Mg + (m)))
#define MADD(a, b, acc) ((acc) + (a) * (b))
#define STORE_Y(i, m, v) y[i] = (v)
#include "conv_gemm_body.glsl"

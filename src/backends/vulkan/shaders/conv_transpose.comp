#version 450
#extension GL_GOOGLE_include_directive : require
// ConvTranspose as a gather: one invocation per output element sums the
// input taps that scatter into it (ih*SH = oh + PH - kh*DH, exactly).
// W is [C, Mg, KH, KW]; group g maps input channels g*Cg.. to outputs g*Mg...
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int KH = 3;
layout(constant_id = 1) const int KW = 3;
layout(constant_id = 2) const int HAS_BIAS = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer Wt { T w[]; };
layout(std430, binding = 2) readonly buffer B { T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH
  int H, W, OH, OW, SH, SW, DH, DW, PH, PW;  // H, W: input; OH, OW: output
  int Cg, Mg, groups;
} pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  int r = int(i);
  int ow = r % pc.OW; r /= pc.OW;
  int oh = r % pc.OH; r /= pc.OH;
  int M = pc.Mg * pc.groups;
  int m = r % M;
  int nb = r / M;
  int g = m / pc.Mg, mm = m - g * pc.Mg;
  int HW = pc.H * pc.W;
  int xbase = (nb * pc.groups + g) * pc.Cg * HW;
  int wstride = pc.Mg * KH * KW;  // between input channels
  int wbase = g * pc.Cg * wstride + mm * KH * KW;
  float acc = HAS_BIAS != 0 ? LD(bias[m]) : 0.0;
  for (int kh = 0; kh < KH; ++kh) {
    int th = oh + pc.PH - kh * pc.DH;
    if (th < 0 || th % pc.SH != 0) continue;
    int ih = th / pc.SH;
    if (ih >= pc.H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      int tw = ow + pc.PW - kw * pc.DW;
      if (tw < 0 || tw % pc.SW != 0) continue;
      int iw = tw / pc.SW;
      if (iw >= pc.W) continue;
      int xo = xbase + ih * pc.W + iw, wo = wbase + kh * KW + kw;
      for (int c = 0; c < pc.Cg; ++c) acc = fma(LD(x[xo + c * HW]), LD(w[wo + c * wstride]), acc);
    }
  }
  y[i] = ST(acc);
}

#version 450
#extension GL_GOOGLE_include_directive : require
// Depthwise convolution (one input channel per group): one invocation per
// output element, a direct KH x KW loop. Memory-bound, so no tiling; the
// taps along a row are neighbours of the neighbouring invocations'.
#include "common.glsl"
#include "activation.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int KH = 3;
layout(constant_id = 1) const int KW = 3;
layout(constant_id = 2) const int ACT = 0;
layout(constant_id = 3) const int HAS_BIAS = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer Wt { T w[]; };
layout(std430, binding = 2) readonly buffer B { T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH
  int H, W, OH, OW, SH, SW, DH, DW, PH, PW;
  int C, M, Mg;  // input channels, output channels, outputs per input channel
  float a, b;
} pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  int r = int(i);
  int ow = r % pc.OW; r /= pc.OW;
  int oh = r % pc.OH; r /= pc.OH;
  int m = r % pc.M;
  int nb = r / pc.M;
  int xbase = (nb * pc.C + m / pc.Mg) * pc.H * pc.W;
  int ih0 = oh * pc.SH - pc.PH, iw0 = ow * pc.SW - pc.PW;
  float acc = HAS_BIAS != 0 ? LD(bias[m]) : 0.0;
  for (int kh = 0; kh < KH; ++kh) {
    int ih = ih0 + kh * pc.DH;
    if (ih < 0 || ih >= pc.H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      int iw = iw0 + kw * pc.DW;
      if (iw < 0 || iw >= pc.W) continue;
      acc = fma(LD(x[xbase + ih * pc.W + iw]), LD(w[(m * KH + kh) * KW + kw]), acc);
    }
  }
  y[i] = ST(activate(ACT, acc, pc.a, pc.b));
}

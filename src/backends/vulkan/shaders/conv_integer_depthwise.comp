#version 450
#extension GL_GOOGLE_include_directive : require
// ConvInteger's sums for a depthwise convolution (one input channel per
// group, as conv_depthwise.comp is for float): one invocation per output
// element, a direct KH x KW loop over (x - x zero point)(w - w zero point),
// exact int32, int32 out; padding contributes zero, as padding with the
// input's zero point does. The implicit-GEMM kernel (conv_integer.comp)
// spent most of a 64-channel tile on a group's one channel: a calibrated
// BlazeFace's depthwise layers took 4x the float model's time on lavapipe.
#include "common.glsl"
#include "packed_bytes.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int KH = 3;
layout(constant_id = 1) const int KW = 3;
layout(constant_id = 2) const int X_SIGNED = 0;
layout(constant_id = 3) const int W_SIGNED = 0;
layout(constant_id = 4) const int W_ZP_PER_CHANNEL = 0;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer Wt { uint w[]; };
layout(std430, binding = 2) readonly buffer XZ { uint x_zero_point[]; };
layout(std430, binding = 3) readonly buffer WZ { int w_zero_point[]; };
layout(std430, binding = 4) writeonly buffer Y { int y[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH
  int H, W, OH, OW, SH, SW, DH, DW, PH, PW;
  int C, M, Mg;  // input channels, output channels, outputs per input channel
  int has_x_zero_point;
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
  int xz = pc.has_x_zero_point != 0 ? packed_byte(x_zero_point[0], 0, X_SIGNED != 0) : 0;
  int wz = w_zero_point[W_ZP_PER_CHANNEL != 0 ? m : 0];
  int acc = 0;
  for (int kh = 0; kh < KH; ++kh) {
    int ih = ih0 + kh * pc.DH;
    if (ih < 0 || ih >= pc.H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      int iw = iw0 + kw * pc.DW;
      if (iw < 0 || iw >= pc.W) continue;
      uint xi = uint(xbase + ih * pc.W + iw), wi = uint((m * KH + kh) * KW + kw);
      acc += (packed_byte(x[xi >> 2], xi, X_SIGNED != 0) - xz) * (packed_byte(w[wi >> 2], wi, W_SIGNED != 0) - wz);
    }
  }
  y[i] = acc;
}

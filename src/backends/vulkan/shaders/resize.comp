#version 450
#extension GL_GOOGLE_include_directive : require
// Resize from per-axis tables computed on the host exactly as the CPU
// reference does (idx: source indices, w: float weights as int bits; axis k's
// entries start at off[k], TAPS per output index).
// LINEAR = 0: nearest over any axes (one tap each).
// LINEAR = 1: linear over the last two axes (two taps each, weights 1/0 for
// an unchanged axis); the leading axes are unchanged.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int WIDE = 0;
layout(constant_id = 1) const int LINEAR = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 0) readonly buffer Xi { int xi[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) readonly buffer W { int wbits[]; };
layout(std430, binding = 3) writeonly buffer Y { T y[]; };
layout(std430, binding = 3) writeonly buffer Yi { int yi[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH
  int odims[6];
  int istride[6];
  int off[6];
} pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  int rest = int(i);
  if (LINEAR == 0) {
    int s = 0;
    for (int k = 5; k >= 0; --k) {
      int c = rest % pc.odims[k];
      rest /= pc.odims[k];
      s += idx[pc.off[k] + c] * pc.istride[k];
    }
    if (WIDE != 0) yi[i] = xi[s];
    else y[i] = x[s];
    return;
  }
  int ox = rest % pc.odims[5];
  rest /= pc.odims[5];
  int oy = rest % pc.odims[4];
  rest /= pc.odims[4];
  int s = 0;
  for (int k = 3; k >= 0; --k) {
    s += (rest % pc.odims[k]) * pc.istride[k];
    rest /= pc.odims[k];
  }
  int tx = pc.off[5] + 2 * ox, ty = pc.off[4] + 2 * oy;
  int x0 = idx[tx] * pc.istride[5], x1 = idx[tx + 1] * pc.istride[5];
  int y0 = s + idx[ty] * pc.istride[4], y1 = s + idx[ty + 1] * pc.istride[4];
  float wx0 = intBitsToFloat(wbits[tx]), wx1 = intBitsToFloat(wbits[tx + 1]);
  float wy0 = intBitsToFloat(wbits[ty]), wy1 = intBitsToFloat(wbits[ty + 1]);
  // Rows first, then the blend of the two rows: the CPU's order.
  float r0 = wx0 * LD(x[y0 + x0]) + wx1 * LD(x[y0 + x1]);
  float r1 = wx0 * LD(x[y1 + x0]) + wx1 * LD(x[y1 + x1]);
  y[i] = ST(wy0 * r0 + wy1 * r1);
}

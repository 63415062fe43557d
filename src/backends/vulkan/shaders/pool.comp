#version 450
#extension GL_GOOGLE_include_directive : require
// MaxPool / AveragePool over 1-D or 2-D windows (1-D as H = 1): one
// invocation per output element. Max: the first in-bounds tap starts the
// maximum and later taps replace it only when greater (the CPU kernel's rule).
// Average: the sum over in-bounds taps divided by their count, or with
// COUNT_PAD by the taps inside the padded input.
#include "common.glsl"
#include "pool_window.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int OP = 0;  // 0 max, 1 average
layout(constant_id = 1) const int COUNT_PAD = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH
  KESTREL_POOL_WINDOW_PUSH
} pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  int r = int(i);
  int ow = r % pc.OW; r /= pc.OW;
  int oh = r % pc.OH;
  int plane = r / pc.OH;
  int xbase = plane * pc.H * pc.W;
  int ih0 = oh * pc.SH - pc.PH, iw0 = ow * pc.SW - pc.PW;
  float acc = OP == 0 ? uintBitsToFloat(0xff800000u) : 0.0;  // -inf for max
  bool first = true;
  int count = 0;
  for (int kh = 0; kh < pc.KH; ++kh) {
    int ih = ih0 + kh * pc.DH;
    if (ih < 0 || ih >= pc.H) continue;
    for (int kw = 0; kw < pc.KW; ++kw) {
      int iw = iw0 + kw * pc.DW;
      if (iw < 0 || iw >= pc.W) continue;
      float v = LD(x[xbase + ih * pc.W + iw]);
      if (OP == 0) {
        if (first || v > acc) acc = v;
        first = false;
      } else {
        acc += v;
        ++count;
      }
    }
  }
  if (OP == 1) {
    if (COUNT_PAD != 0) count = KESTREL_PADDED_WINDOW_TAPS(ih0, iw0);
    acc = count > 0 ? acc / float(count) : 0.0;
  }
  y[i] = ST(acc);
}

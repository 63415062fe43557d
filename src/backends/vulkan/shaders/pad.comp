#version 450
#extension GL_GOOGLE_include_directive : require
// Pad over up to 6 dims: each output coordinate maps back to the input
// (MODE 0 constant, 1 reflect, 2 edge, 3 wrap) or, in constant mode, to the
// fill value. Negative pads (constant mode) crop.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int WIDE = 0;
layout(constant_id = 1) const int MODE = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 0) readonly buffer Xi { int xi[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(std430, binding = 1) writeonly buffer Yi { int yi[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH
  int odims[6];
  int idims[6];
  int before[6];
  float value;
  int ivalue;
} pc;

// a mod m in [0, m): GLSL leaves % undefined for negative operands (and
// NVIDIA's result differs from lavapipe's), so negatives are folded by hand.
int pos_mod(int a, int m) { return a >= 0 ? a % m : (m - 1) - ((-a - 1) % m); }

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  int rest = int(i), s = 0, stride = 1;
  bool fill = false;
  for (int k = 5; k >= 0; --k) {
    int c = rest % pc.odims[k] - pc.before[k], d = pc.idims[k];
    rest /= pc.odims[k];
    if (c < 0 || c >= d) {
      if (MODE == 0) fill = true;
      else if (MODE == 2) c = c < 0 ? 0 : d - 1;
      else if (MODE == 3) c = pos_mod(c, d);
      else if (d == 1) c = 0;
      else {
        int p = 2 * (d - 1);
        c = pos_mod(c, p);
        c = c < d ? c : p - c;
      }
    }
    s += c * stride;
    stride *= d;
  }
  if (WIDE != 0) yi[i] = fill ? pc.ivalue : xi[s];
  else y[i] = fill ? ST(pc.value) : x[s];
}

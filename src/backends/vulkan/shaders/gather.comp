#version 450
#extension GL_GOOGLE_include_directive : require
// Gather along one axis: x viewed as [outer, axis, inner], y as
// [outer, m, inner] with y[o, j, i] = x[o, idx[j], i]. Negative indices count
// from the end; out-of-range ones are clamped (never a wild read).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int WIDE = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 0) readonly buffer Xi { int xi[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) writeonly buffer Y { T y[]; };
layout(std430, binding = 2) writeonly buffer Yi { int yi[]; };
layout(push_constant) uniform Push { KESTREL_ELEMENTWISE_PUSH uint inner; uint m; int axis; } pc;

void main() {
  uint t = pc.base + kestrel_index();
  if (t >= pc.n) return;
  uint i = t % pc.inner, r = t / pc.inner;
  uint j = r % pc.m, o = r / pc.m;
  int k = idx[j];
  k = clamp(k < 0 ? k + pc.axis : k, 0, pc.axis - 1);
  uint s = (o * uint(pc.axis) + uint(k)) * pc.inner + i;
  if (WIDE != 0) yi[t] = xi[s];
  else y[t] = x[s];
}

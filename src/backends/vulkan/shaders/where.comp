#version 450
#extension GL_GOOGLE_include_directive : require
// out = cond ? x : y with NumPy broadcasting of all three over up to 6 dims
// (strides of 0 along broadcast dims). cond is a bool tensor, stored as int32.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int WIDE = 0;
layout(std430, binding = 0) readonly buffer C { int cond[]; };
layout(std430, binding = 1) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer Xi { int xi[]; };
layout(std430, binding = 2) readonly buffer Y { T y[]; };
layout(std430, binding = 2) readonly buffer Yi { int yi[]; };
layout(std430, binding = 3) writeonly buffer O { T o[]; };
layout(std430, binding = 3) writeonly buffer Oi { int oi[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH
  int dims[6];
  int sc[6];
  int sx[6];
  int sy[6];
} pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  int rest = int(i), ic = 0, ix = 0, iy = 0;
  for (int d = 5; d >= 0; --d) {
    int k = rest % pc.dims[d];
    rest /= pc.dims[d];
    ic += k * pc.sc[d];
    ix += k * pc.sx[d];
    iy += k * pc.sy[d];
  }
  bool c = cond[ic] != 0;
  if (WIDE != 0) oi[i] = c ? xi[ix] : yi[iy];
  else o[i] = c ? x[ix] : y[iy];
}

#version 450
#extension GL_GOOGLE_include_directive : require
// Comparisons of float tensors with NumPy broadcasting (as binary.comp); the
// boolean result is stored as int32 0/1. OP: 0 Equal, 1 Less, 2 Greater,
// 3 LessOrEqual, 4 GreaterOrEqual. NaN compares false, as in IEEE.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int OP = 0;
layout(std430, binding = 0) readonly buffer A { T a[]; };
layout(std430, binding = 1) readonly buffer B { T b[]; };
layout(std430, binding = 2) writeonly buffer C { int c[]; };
layout(push_constant) uniform Push { KESTREL_BROADCAST_PUSH } pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  uint ia, ib;
  KESTREL_BROADCAST_INDEX(i, ia, ib)
  float x = LD(a[ia]), y = LD(b[ib]);
  bool r = OP == 0 ? x == y : OP == 1 ? x < y : OP == 2 ? x > y : OP == 3 ? x <= y : x >= y;
  c[i] = r ? 1 : 0;
}

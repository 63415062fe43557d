#version 450
#extension GL_GOOGLE_include_directive : require
// Boolean logic on int32-stored booleans with NumPy broadcasting:
// OP 0 And, 1 Or, 2 Xor, 3 Not (b unused).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int OP = 0;
layout(std430, binding = 0) readonly buffer A { int a[]; };
layout(std430, binding = 1) readonly buffer B { int b[]; };
layout(std430, binding = 2) writeonly buffer C { int c[]; };
layout(push_constant) uniform Push { KESTREL_BROADCAST_PUSH } pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  uint ia, ib;
  KESTREL_BROADCAST_INDEX(i, ia, ib)
  bool x = a[ia] != 0, y = OP == 3 ? false : b[ib] != 0;
  bool r = OP == 0 ? x && y : OP == 1 ? x || y : OP == 2 ? x != y : !x;
  c[i] = r ? 1 : 0;
}

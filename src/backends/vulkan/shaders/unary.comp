#version 450
#extension GL_GOOGLE_include_directive : require
// y = f(x) element-wise; f is the ACT specialization constant (activation.glsl).
#include "common.glsl"
#include "activation.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int ACT = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push { KESTREL_ELEMENTWISE_PUSH float a; float b; } pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  y[i] = ST(activate(ACT, LD(x[i]), pc.a, pc.b));
}

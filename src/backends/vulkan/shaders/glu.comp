#version 450
#extension GL_GOOGLE_include_directive : require
// Gated MLP: y[r, j] = act(h[r, j]) * h[r, f + j] for rows of h 2f wide.
#include "common.glsl"
#include "activation.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int ACT = 0;
layout(std430, binding = 0) readonly buffer H { T h[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push { KESTREL_ELEMENTWISE_PUSH uint f; float a; float b; } pc;

void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  uint r = e / pc.f, j = e % pc.f;
  float v = LD(h[r * 2 * pc.f + j]);
  y[e] = ST(activate(ACT, v, pc.a, pc.b) * LD(h[r * 2 * pc.f + pc.f + j]));
}

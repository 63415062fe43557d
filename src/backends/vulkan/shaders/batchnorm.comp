#version 450
#extension GL_GOOGLE_include_directive : require
// BatchNormalization (inference) with its parameters folded on the host:
// y = x * k + shift, k and shift indexed by (i / pdiv) % pmod: the channel of
// an [N, C, ...] tensor, or (spatial=0 of opsets 7-8) the element within a sample.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer K { T k[]; };
layout(std430, binding = 2) readonly buffer S { T shift[]; };
layout(std430, binding = 3) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push { KESTREL_ELEMENTWISE_PUSH uint pdiv; uint pmod; } pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  uint c = (i / pc.pdiv) % pc.pmod;
  y[i] = ST(fma(LD(x[i]), LD(k[c]), LD(shift[c])));
}

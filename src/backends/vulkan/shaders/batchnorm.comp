#version 450
#extension GL_GOOGLE_include_directive : require
// BatchNormalization (inference): y = (x - mean) * scale / sqrt(var + eps) + B,
// the parameters indexed by (i / pdiv) % pmod: the channel of an [N, C, ...]
// tensor, or (spatial=0 of opsets 7-8) the element within a sample.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer S { T scale[]; };
layout(std430, binding = 2) readonly buffer B { T bias[]; };
layout(std430, binding = 3) readonly buffer M { T mean[]; };
layout(std430, binding = 4) readonly buffer V { T var[]; };
layout(std430, binding = 5) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push { KESTREL_ELEMENTWISE_PUSH uint pdiv; uint pmod; float eps; } pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  uint c = (i / pc.pdiv) % pc.pmod;
  float k = LD(scale[c]) * inversesqrt(LD(var[c]) + pc.eps);
  y[i] = ST((LD(x[i]) - LD(mean[c])) * k + LD(bias[c]));
}

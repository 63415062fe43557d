#version 450
#extension GL_GOOGLE_include_directive : require
// DynamicQuantizeLinear, pass 3: y = saturate(round_half_even(x / scale) + zp)
// as uint8, four per invocation so each writes one whole packed word.
#include "common.glsl"
#include "div_rn.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer Q { float params[]; };
layout(std430, binding = 2) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Push { KESTREL_ELEMENTWISE_PUSH uint count; } pc;

void main() {
  uint w = pc.base + kestrel_index();  // word index
  if (w >= pc.n) return;
  float scale = params[0], zp = params[1];
  uint packed = 0;
  for (uint k = 0; k < 4; ++k) {
    uint i = 4 * w + k;
    uint q = 0;
    if (i < pc.count) q = scale == 0.0 ? uint(zp) : uint(clamp(roundEven(div_rn(LD(x[i]), scale)) + zp, 0.0, 255.0));
    packed |= q << (8 * k);
  }
  y[w] = packed;
}

#version 450
#extension GL_GOOGLE_include_directive : require
// Rotary position embedding in place on rows of width heads * head_dim
// (queries or keys): for each head, pair j with j + half rotates by the
// angle of the row's position. cos and sin come in as tables
// [tokens, half] computed on the host (GPU sin/cos lose precision at large
// angles).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer C { T cos_t[]; };
layout(std430, binding = 2) readonly buffer S { T sin_t[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH  // n = rows * heads * half
  uint tokens, heads, half_dim;
} pc;

void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  uint per_row = pc.heads * pc.half_dim;
  uint r = e / per_row, rem = e % per_row;
  uint h = rem / pc.half_dim, j = rem % pc.half_dim;
  uint pos = r % pc.tokens;
  uint at = r * per_row * 2 + h * 2 * pc.half_dim + j;
  float c = LD(cos_t[pos * pc.half_dim + j]), s = LD(sin_t[pos * pc.half_dim + j]);
  float a = LD(x[at]), b = LD(x[at + pc.half_dim]);
  x[at] = ST(a * c - b * s);
  x[at + pc.half_dim] = ST(b * c + a * s);
}

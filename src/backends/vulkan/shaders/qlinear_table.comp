#version 450
#extension GL_GOOGLE_include_directive : require
// Each byte of an 8-bit tensor (packed four to a word) through a table of
// its 256 values, which the host builds as the CPU does (ops/
// qlinear_params.h: com.microsoft QLinearSigmoid, QLinearLeakyRelu): one
// output word per invocation. Bit for bit the CPU's.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer Table { int table[]; };
layout(std430, binding = 2) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH  // n: words
  uint count;               // values
} pc;

void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  uint word = x[e], packed = 0;
  for (uint k = 0; k < 4 && 4 * e + k < pc.count; ++k)
    packed |= (uint(table[(word >> (8 * k)) & 0xffu]) & 0xffu) << (8 * k);
  y[e] = packed;
}

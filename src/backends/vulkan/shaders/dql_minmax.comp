#version 450
#extension GL_GOOGLE_include_directive : require
// DynamicQuantizeLinear, pass 1: each workgroup reduces its slice of x to a
// (min, max) pair, both including 0 as ONNX requires.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer P { float partial[]; };
layout(push_constant) uniform Push { uint n; uint per_group; } pc;
shared float lo[256];
shared float hi[256];

void main() {
  uint g = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  uint begin = g * pc.per_group, end = min(pc.n, begin + pc.per_group);
  float a = 0.0, b = 0.0;
  for (uint i = begin + t; i < end; i += 256) {
    float v = LD(x[i]);
    a = min(a, v);
    b = max(b, v);
  }
  lo[t] = a;
  hi[t] = b;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) {
      lo[t] = min(lo[t], lo[t + s]);
      hi[t] = max(hi[t], hi[t + s]);
    }
    barrier();
  }
  if (t == 0) {
    partial[2 * g] = lo[0];
    partial[2 * g + 1] = hi[0];
  }
}

#version 450
#extension GL_GOOGLE_include_directive : require
// GlobalAveragePool / GlobalMaxPool: one workgroup per (batch, channel) plane,
// strided partial results per thread, then a tree in shared memory. A NaN
// anywhere in a plane makes its maximum NaN, as on the CPU.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int OP = 0;  // 0 max, 1 average
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push {
  int plane0;  // first plane of this dispatch
  int size;    // elements per plane
} pc;

shared float part[256];

float combine(float a, float b) {
  if (OP == 1) return a + b;
  return (isnan(a) || b > a) ? (isnan(a) ? a : b) : (isnan(b) ? b : a);
}

void main() {
  int t = int(gl_LocalInvocationID.x);
  int plane = pc.plane0 + int(gl_WorkGroupID.x);
  int base = plane * pc.size;
  float acc = OP == 1 ? 0.0 : uintBitsToFloat(0xff800000u);
  for (int i = t; i < pc.size; i += 256) acc = combine(acc, LD(x[base + i]));
  part[t] = acc;
  barrier();
  for (int s = 128; s > 0; s >>= 1) {
    if (t < s) part[t] = combine(part[t], part[t + s]);
    barrier();
  }
  if (t == 0) y[plane] = ST(OP == 1 ? part[0] / float(pc.size) : part[0]);
}

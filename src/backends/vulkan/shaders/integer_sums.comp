#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// The sums gemm_integer_coop_body.glsl corrects its zero points with, over
// the operands' bytes shifted into int8 (a uint8 byte minus 128): A's row
// sums into sums[0, M) (COLUMNS 0: one workgroup a row, its threads along
// k), B's column sums into sums[M, M + N) (COLUMNS 1: one thread a column,
// neighbouring threads on neighbouring bytes). Addressed through the GEMM's
// push constants and strides (one batch).
#include "common.glsl"
#include "gemm_push.glsl"
#include "packed_bytes.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const int COLUMNS = 0;
layout(constant_id = 1) const int SIGNED = 0;  // the operand summed is int8, else uint8
layout(std430, binding = 0) readonly buffer A_ { uint a[]; };
layout(std430, binding = 1) readonly buffer B_ { uint b[]; };
layout(std430, binding = 2) writeonly buffer S_ { int sums[]; };

shared int partial[64];

void main() {
  const int shift = SIGNED != 0 ? 0 : 128;
  if (COLUMNS != 0) {
    uint n = gl_GlobalInvocationID.x;
    if (n >= pc.N) return;
    int s = 0;
    for (uint k = 0; k < pc.K; ++k) {
      uint i = k * pc.sbk + n * pc.sbn;
      s += packed_byte(b[i >> 2], i, SIGNED != 0) - shift;
    }
    sums[pc.M + n] = s;
    return;
  }
  uint m = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, t = gl_LocalInvocationID.x;
  int s = 0;
  if (m < pc.M)
    for (uint k = t; k < pc.K; k += 64) {
      uint i = m * pc.sam + k * pc.sak;
      s += packed_byte(a[i >> 2], i, SIGNED != 0) - shift;
    }
  partial[t] = s;
  barrier();
  [[unroll]] for (uint w = 32; w > 0; w >>= 1) {
    if (t < w) partial[t] += partial[t + w];
    barrier();
  }
  if (t == 0 && m < pc.M) sums[m] = partial[0];
}

#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// The sums gemm_integer_coop_body.glsl corrects its zero points with, over
// the operands' bytes shifted into int8 (a uint8 byte minus 128), addressed
// through the GEMM's push constants and strides (one batch):
//   MODE 0: A's row sums into sums[0, M), one workgroup a row, its threads
//           along k;
//   MODE 1: B's column sums over k in parts of KPART rows into part[p * N +
//           n], one thread a column of a part, neighbouring threads on
//           neighbouring bytes (a thread a whole column left most of a large
//           GPU idle: 4096 threads, each 4096 loads in turn, took longer
//           than the product);
//   MODE 2: the parts added into sums[M, M + N).
#include "common.glsl"
#include "gemm_push.glsl"
#include "packed_bytes.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const int SIGNED = 0;  // the operand summed is int8, else uint8
layout(std430, binding = 0) readonly buffer A_ { uint a[]; };
layout(std430, binding = 1) readonly buffer B_ { uint b[]; };
layout(std430, binding = 2) buffer S_ { int sums[]; };
layout(std430, binding = 3) buffer P_ { int part[]; };
const uint KPART = 256;

shared int partial[64];

void main() {
  const int shift = SIGNED != 0 ? 0 : 128;
  if (MODE == 1) {
    uint n = gl_GlobalInvocationID.x, k0 = gl_WorkGroupID.y * KPART;
    if (n >= pc.N) return;
    int s = 0;
    for (uint k = k0; k < min(pc.K, k0 + KPART); ++k) {
      uint i = k * pc.sbk + n * pc.sbn;
      s += packed_byte(b[i >> 2], i, SIGNED != 0) - shift;
    }
    part[gl_WorkGroupID.y * pc.N + n] = s;
    return;
  }
  if (MODE == 2) {
    uint n = gl_GlobalInvocationID.x;
    if (n >= pc.N) return;
    int s = 0;
    for (uint p = 0; p < (pc.K + KPART - 1) / KPART; ++p) s += part[p * pc.N + n];
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

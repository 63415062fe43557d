#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// MatMulNBits for a few rows of A (a decoder's token, M <= ROWS): each
// output is a long dot product whose cost is reading the column's weights,
// so the 4-bit words are read once, straight from memory, and never staged:
// 8 columns per workgroup, 32 threads on each, every thread a word (8
// weights along k) at a time for all rows; the 32 partial sums of each
// output are added in shared memory. A tiled GEMM would stage and
// re-read the weights for rows that are not there.
//
//   Y[m, n] = sum_k A[m, k] B[k, n] (+ bias[n]),  B the dequantized weights
// (nbits_weights.glsl). Bindings: 0 A [M, K], 1 B's words, 2 bias (HAS_BIAS),
// 3 Y [M, N], 4 unused, 5 scales, 6 zero points.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int HAS_BIAS = 0;
layout(push_constant) uniform Push { uint M, N, K; } pc;
layout(std430, binding = 0) readonly buffer A_ { T a[]; };
layout(std430, binding = 2) readonly buffer Bias_ { T bias[]; };
layout(std430, binding = 3) writeonly buffer Y_ { T y[]; };
#include "nbits_weights.glsl"

const uint ROWS = 4, LANES = 32, COLS = 256 / LANES;
shared float partial[ROWS][256];

void main() {
  uint tid = gl_LocalInvocationID.x, lane = tid % LANES;
  uint n = gl_WorkGroupID.x * COLS + tid / LANES;
  float acc[ROWS];
  [[unroll]] for (uint m = 0; m < ROWS; ++m) acc[m] = 0.0;
  if (n < pc.N) {
    for (uint k = lane * 8u; k < pc.K; k += LANES * 8u) {
      float w[8];
      nbits_weights8(k, n, w);
      uint live = min(8u, pc.K - k);
      [[unroll]] for (uint m = 0; m < ROWS; ++m) {
        if (m >= pc.M) break;
        [[unroll]] for (uint h = 0; h < 8; ++h)
          if (h < live) acc[m] += LD(a[m * pc.K + k + h]) * w[h];
      }
    }
  }
  [[unroll]] for (uint m = 0; m < ROWS; ++m) partial[m][tid] = acc[m];
  barrier();
  [[unroll]] for (uint s = LANES / 2; s > 0; s /= 2) {
    if (lane < s) [[unroll]] for (uint m = 0; m < ROWS; ++m) partial[m][tid] += partial[m][tid + s];
    barrier();
  }
  if (lane == 0 && n < pc.N)
    for (uint m = 0; m < pc.M; ++m) {
      float v = partial[m][tid];
      if (HAS_BIAS != 0) v += LD(bias[n]);
      y[m * pc.N + n] = T(v);
    }
}

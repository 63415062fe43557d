#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// MatMulNBits for a few rows of A (a decoder's token, M <= ROWS): each
// output is a long dot product whose cost is reading the column's weights,
// so the 4-bit words are read once, straight from memory, and never staged.
// A tiled GEMM would stage and re-read the weights for rows that are not
// there.
//
// Bandwidth needs many bytes in flight: a workgroup of 64 threads owns COLS
// columns, and each thread takes 32 weights along k (16 bytes) of every one
// of them at a time, as one 16-byte load per column where the columns'
// words allow it (VEC_WORDS). The A values of those 32 k are read once for
// the COLS columns (as 4-wide loads where A allows it: VEC_A), and each
// column's block is factored out of its sum: with q the 4-bit values, z the
// zero point and s the scale of the block,
//   sum_h a_h (q_h - z) s = s (sum_h a_h q_h - z sum_h a_h),
// so a weight costs its unpacking and one multiply-add, and sum_h a_h is
// shared by the columns. The 64 partial sums of each output are added in
// shared memory.
//
//   Y[m, n] = sum_k A[m, k] B[k, n] (+ bias[n]),  B the dequantized weights
// (nbits_weights.glsl). Bindings: 0 A [M, K], 1 B's words, 2 bias (HAS_BIAS),
// 3 Y [M, N], 4 unused, 5 scales, 6 zero points.
#include "common.glsl"
const uint THREADS = 64, ROWS = 4, COLS = 4, CHUNK = 32;  // CHUNK: weights along k a thread takes at a time
layout(local_size_x = 64) in;
layout(constant_id = 0) const int HAS_BIAS = 0;
// Every column's words start 16-byte aligned and are a whole number of
// chunks (blocks x block_size a multiple of 32): one 16-byte load a chunk.
layout(constant_id = 1) const int VEC_WORDS = 0;
// A's binding is aligned to 4 elements and K is a multiple of 4.
layout(constant_id = 2) const int VEC_A = 0;
layout(push_constant) uniform Push { uint M, N, K; } pc;
layout(std430, binding = 0) readonly buffer A_ { T a[]; };
#ifdef KESTREL_F16
#define T4 f16vec4
#else
#define T4 vec4
#endif
layout(std430, binding = 0) readonly buffer A4_ { T4 a4[]; };
layout(std430, binding = 2) readonly buffer Bias_ { T bias[]; };
layout(std430, binding = 3) writeonly buffer Y_ { T y[]; };
#include "nbits_weights.glsl"
layout(std430, binding = 1) readonly buffer NbitsB4_ { uvec4 nb_quads[]; };

shared float partial[ROWS * COLS][THREADS];

// The 4 words holding weights k .. k + 31 of column n (k a multiple of 32;
// words past the column's last block read as zero, and their A is zero).
uvec4 chunk_words(uint n, uint k, uint column_words) {
  uint first = n * column_words + k / 8u;
  if (VEC_WORDS != 0) return nb_quads[first / 4u];
  uvec4 q = uvec4(0);
  [[unroll]] for (uint w = 0; w < 4; ++w)
    if (k / 8u + w < column_words) q[w] = nb_words[first + w];
  return q;
}

// A[m, k .. k + 31], zero past K.
void chunk_a(uint m, uint k, out float v[CHUNK]) {
  if (VEC_A != 0 && k + CHUNK <= pc.K) {
    uint base = (m * pc.K + k) / 4u;
    [[unroll]] for (uint i = 0; i < CHUNK / 4; ++i) {
      vec4 q = vec4(a4[base + i]);
      v[4 * i] = q.x, v[4 * i + 1] = q.y, v[4 * i + 2] = q.z, v[4 * i + 3] = q.w;
    }
    return;
  }
  [[unroll]] for (uint h = 0; h < CHUNK; ++h) v[h] = k + h < pc.K ? LD(a[m * pc.K + k + h]) : 0.0;
}

void main() {
  uint t = gl_LocalInvocationID.x, n0 = gl_WorkGroupID.x * COLS;
  uint column_words = nb_blocks() * uint(NB_BLOCK) / 8u;
  float acc[ROWS][COLS];
  [[unroll]] for (uint m = 0; m < ROWS; ++m)[[unroll]] for (uint c = 0; c < COLS; ++c) acc[m][c] = 0.0;
  for (uint k = t * CHUNK; k < pc.K; k += THREADS * CHUNK) {
    // Every column's words first, so their loads are in flight together.
    uvec4 q[COLS];
    [[unroll]] for (uint c = 0; c < COLS; ++c) q[c] = n0 + c < pc.N ? chunk_words(n0 + c, k, column_words) : uvec4(0);
    // A chunk is one block, or two where blocks hold 16 (words 0-1, 2-3).
    uint b0 = k / uint(NB_BLOCK), b1 = (k + 16u) / uint(NB_BLOCK);
    // (The rows in a loop, not unrolled: unrolled, the kernel's code was 4x
    // as long for the one row a decoder's token has, and lavapipe's compile
    // of it under the validation layer's instrumentation took minutes.)
    for (uint m = 0; m < pc.M; ++m) {
      float v[CHUNK];
      chunk_a(m, k, v);
      float sum_lo = 0.0, sum_hi = 0.0;  // sum_h a_h over each half (its block)
      [[unroll]] for (uint h = 0; h < 16; ++h) sum_lo += v[h], sum_hi += v[16 + h];
      [[unroll]] for (uint c = 0; c < COLS; ++c) {
        uint n = min(n0 + c, pc.N - 1u);
        float dot_lo = 0.0, dot_hi = 0.0;  // sum_h a_h q_h over each half
        [[unroll]] for (uint w = 0; w < 4; ++w)
          [[unroll]] for (uint h = 0; h < 8; ++h) {
            float qh = float((q[c][w] >> (4u * h)) & 15u);
            if (w < 2)
              dot_lo += v[8 * w + h] * qh;
            else
              dot_hi += v[8 * w + h] * qh;
          }
        if (b1 == b0) {
          acc[m][c] += nb_scale(n, b0) * (dot_lo + dot_hi - nb_zero(n, b0) * (sum_lo + sum_hi));
        } else {
          acc[m][c] += nb_scale(n, b0) * (dot_lo - nb_zero(n, b0) * sum_lo);
          if (k + 16u < pc.K) acc[m][c] += nb_scale(n, b1) * (dot_hi - nb_zero(n, b1) * sum_hi);
        }
      }
    }
  }
  [[unroll]] for (uint m = 0; m < ROWS; ++m)[[unroll]] for (uint c = 0; c < COLS; ++c) partial[m * COLS + c][t] = acc[m][c];
  barrier();
  [[unroll]] for (uint s = THREADS / 2; s > 0; s /= 2) {
    if (t < s)
      [[unroll]] for (uint i = 0; i < ROWS * COLS; ++i)
        if (i < pc.M * COLS) partial[i][t] += partial[i][t + s];
    barrier();
  }
  if (t < pc.M * COLS) {
    uint m = t / COLS, n = n0 + t % COLS;
    if (n < pc.N) {
      float v = partial[t][0];
      if (HAS_BIAS != 0) v += LD(bias[n]);
      y[m * pc.N + n] = T(v);
    }
  }
}

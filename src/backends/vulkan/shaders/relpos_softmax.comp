#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Softmax over one ViT-Det attention score row per workgroup after adding
// its decomposed relative-position bias: query (i, j) and key (ki, kj) of a
// rows x cols grid get ph[r, i - ki + rows - 1] + pw[r, j - kj + cols - 1],
// where ph and pw hold the query's products with every row of the height
// and width tables (relative_products in ops/fused_encoder.cpp) and r is the
// query's row of them. Score rows are [windows * heads, chunk_rows] of the
// queries q0 .. q0 + chunk_rows - 1 (attention runs in chunks of query rows).
// A row of at most KESTREL_ROW_CACHE * 256 scores (a 64x64 grid) is read
// once (rows.glsl); a longer one once per pass.
#include "common.glsl"
#include "rows.glsl"
layout(std430, binding = 0) buffer S { T s[]; };
layout(std430, binding = 1) readonly buffer PH { T ph[]; };
layout(std430, binding = 2) readonly buffer PW { T pw[]; };
layout(push_constant) uniform Push {
  KESTREL_ROW_PUSH
  uint rows, cols;
  uint q0, chunk_rows;
} pc;

uint base, hb, wb;  // ph's entry for key row ki is hb - ki; pw's for key column kj, wb - kj
float biased(uint j) { return LD(s[base + j]) + LD(ph[hb - j / pc.cols]) + LD(pw[wb - j % pc.cols]); }

void main() {
  uint row = pc.row_base + kestrel_row();
  if (row >= pc.row_end) return;  // uniform over the workgroup
  uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  uint n = pc.rows * pc.cols;
  uint query = pc.q0 + row % pc.chunk_rows;
  uint rel_row = (row / pc.chunk_rows) * n + query;
  base = row * n;
  hb = rel_row * (2 * pc.rows - 1) + query / pc.cols + pc.rows - 1;
  wb = rel_row * (2 * pc.cols - 1) + query % pc.cols + pc.cols - 1;
  const bool cached = n <= KESTREL_ROW_CACHE * wg;
  float v[KESTREL_ROW_CACHE];
  float m = KESTREL_NEG_INF;
  if (cached) {
    [[unroll]] for (uint c = 0; c < KESTREL_ROW_CACHE; ++c) {
      uint j = t + c * wg;
      v[c] = j < n ? biased(j) : KESTREL_NEG_INF;
      m = max(m, v[c]);
    }
  } else {
    for (uint j = t; j < n; j += wg) {
      float e = biased(j);
      s[base + j] = ST(e);
      m = max(m, e);
    }
  }
  m = kestrel_wg_max(m);
  float sum = 0.0;
  if (cached) {
    [[unroll]] for (uint c = 0; c < KESTREL_ROW_CACHE; ++c)
      if (t + c * wg < n) sum += exp(v[c] - m);
  } else {
    for (uint j = t; j < n; j += wg) sum += exp(LD(s[base + j]) - m);
  }
  sum = kestrel_wg_sum(sum);
  float inv = 1.0 / sum;
  if (cached) {
    [[unroll]] for (uint c = 0; c < KESTREL_ROW_CACHE; ++c) {
      uint j = t + c * wg;
      if (j < n) s[base + j] = ST(exp(v[c] - m) * inv);
    }
  } else {
    for (uint j = t; j < n; j += wg) s[base + j] = ST(exp(LD(s[base + j]) - m) * inv);
  }
}

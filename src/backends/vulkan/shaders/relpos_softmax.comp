#version 450
#extension GL_GOOGLE_include_directive : require
// Softmax over one ViT-Det attention score row per workgroup after adding
// its decomposed relative-position bias (relpos.comp): key (ki, kj) of a
// rows x cols grid gets rel[r, ki] + rel[r, rows + kj], r the query's row of
// rel. Score rows are [windows * heads, chunk_rows] of the queries q0 ..
// q0 + chunk_rows - 1 (attention runs in chunks of query rows).
#include "common.glsl"
#include "rows.glsl"
layout(std430, binding = 0) buffer S { T s[]; };
layout(std430, binding = 1) readonly buffer R { T rel[]; };
layout(push_constant) uniform Push {
  KESTREL_ROW_PUSH
  uint rows, cols;
  uint q0, chunk_rows;
} pc;

void main() {
  uint row = pc.row_base + kestrel_row();
  if (row >= pc.row_end) return;  // uniform over the workgroup
  uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  uint n = pc.rows * pc.cols, span = pc.rows + pc.cols;
  uint rel_row = (row / pc.chunk_rows) * n + pc.q0 + row % pc.chunk_rows;
  uint base = row * n, rb = rel_row * span;
  float m = KESTREL_NEG_INF;
  for (uint j = t; j < n; j += wg) {
    float v = LD(s[base + j]) + LD(rel[rb + j / pc.cols]) + LD(rel[rb + pc.rows + j % pc.cols]);
    s[base + j] = ST(v);
    m = max(m, v);
  }
  m = kestrel_wg_max(m);
  float sum = 0.0;
  for (uint j = t; j < n; j += wg) sum += exp(LD(s[base + j]) - m);
  sum = kestrel_wg_sum(sum);
  float inv = 1.0 / sum;
  for (uint j = t; j < n; j += wg) s[base + j] = ST(exp(LD(s[base + j]) - m) * inv);
}

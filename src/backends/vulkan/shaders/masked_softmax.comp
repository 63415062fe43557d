#version 450
#extension GL_GOOGLE_include_directive : require
// Softmax over one attention score row per workgroup, keeping only the keys
// a query may see: key j of sequence b when mask[b, j] != 0 (HAS_MASK) and,
// with a window w >= 0, |i - j| <= w. Masked keys get 0. A query that may
// see no key gets what its graph gives it: 1/n for every key when masked
// scores are a finite minimum (all scores then tie), 0 when they are -inf
// (the exporters' NaN guard). Rows are [batch, heads, rows] of n keys: the
// queries q0 .. q0 + rows - 1 (attention runs in chunks of query rows).
#include "common.glsl"
#include "rows.glsl"
layout(constant_id = 0) const int HAS_MASK = 1;
layout(std430, binding = 0) buffer S { T s[]; };
layout(std430, binding = 1) readonly buffer M { int mask[]; };
layout(push_constant) uniform Push {
  KESTREL_ROW_PUSH
  uint n;          // keys (= tokens)
  uint heads;
  int window;      // -1: every key
  uint finite_masked;
  uint q0, rows;   // this chunk's first query and its query count
} pc;

bool visible(uint b, uint i, uint j) {
  if (HAS_MASK != 0 && mask[b * pc.n + j] == 0) return false;
  return pc.window < 0 || abs(int(i) - int(j)) <= pc.window;
}

void main() {
  uint row = pc.row_base + kestrel_row();
  if (row >= pc.row_end) return;  // uniform over the workgroup
  uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  uint i = pc.q0 + row % pc.rows, b = row / (pc.heads * pc.rows);
  uint base = row * pc.n;
  float m = KESTREL_NEG_INF;
  for (uint j = t; j < pc.n; j += wg)
    if (visible(b, i, j)) m = max(m, LD(s[base + j]));
  m = kestrel_wg_max(m);
  if (isinf(m)) {  // no visible key
    float fill = pc.finite_masked != 0 ? 1.0 / float(pc.n) : 0.0;
    for (uint j = t; j < pc.n; j += wg) s[base + j] = ST(fill);
    return;
  }
  float sum = 0.0;
  for (uint j = t; j < pc.n; j += wg)
    if (visible(b, i, j)) sum += exp(LD(s[base + j]) - m);
  sum = kestrel_wg_sum(sum);
  float inv = 1.0 / sum;
  for (uint j = t; j < pc.n; j += wg) s[base + j] = ST(visible(b, i, j) ? exp(LD(s[base + j]) - m) * inv : 0.0);
}

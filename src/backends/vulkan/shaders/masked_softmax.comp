#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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

uint base, b, i;  // the row's first score, its sequence and its query
bool visible(uint j) {
  if (HAS_MASK != 0 && mask[b * pc.n + j] == 0) return false;
  return pc.window < 0 || abs(int(i) - int(j)) <= pc.window;
}
float score(uint j) { return visible(j) ? LD(s[base + j]) : KESTREL_NEG_INF; }
void put(uint j, float e, float m, float sum) { s[base + j] = ST(exp(e - m) / sum); }  // exp(-inf) = 0
#include "softmax_row.glsl"

void main() {
  uint row = pc.row_base + kestrel_row();
  if (row >= pc.row_end) return;  // uniform over the workgroup
  i = pc.q0 + row % pc.rows, b = row / (pc.heads * pc.rows);
  base = row * pc.n;
  if (!softmax_row(pc.n, false)) {  // no visible key
    float fill = pc.finite_masked != 0 ? 1.0 / float(pc.n) : 0.0;
    for (uint j = gl_LocalInvocationID.x; j < pc.n; j += gl_WorkGroupSize.x) s[base + j] = ST(fill);
  }
}

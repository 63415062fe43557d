#version 450
#extension GL_GOOGLE_include_directive : require
// The decomposed relative-position terms of ViT-Det attention (SAM's two
// Einsums): for query token t = (i, j) of a rows x cols attention grid in
// window w, head h,
//   rel[(w, h, t), k]        = q . table_h[i - k + rows - 1]   (k < rows)
//   rel[(w, h, t), rows + k] = q . table_w[j - k + cols - 1]   (k < cols)
// with q the unscaled query, head h's columns of row (w, t) of q [.., D].
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Q { T q[]; };
layout(std430, binding = 1) readonly buffer H { T table_h[]; };
layout(std430, binding = 2) readonly buffer W { T table_w[]; };
layout(std430, binding = 3) writeonly buffer R { T rel[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH  // n = windows * heads * tokens * (rows + cols)
  uint heads, head_dim, rows, cols;
} pc;

void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  uint span = pc.rows + pc.cols, tokens = pc.rows * pc.cols;
  uint row = e / span, k = e % span;
  uint t = row % tokens, h = (row / tokens) % pc.heads, w = row / (tokens * pc.heads);
  uint qa = (w * tokens + t) * pc.heads * pc.head_dim + h * pc.head_dim;
  float s = 0.0;
  if (k < pc.rows) {
    uint ta = (t / pc.cols + pc.rows - 1 - k) * pc.head_dim;
    for (uint c = 0; c < pc.head_dim; ++c) s += LD(q[qa + c]) * LD(table_h[ta + c]);
  } else {
    uint ta = (t % pc.cols + pc.cols - 1 - (k - pc.rows)) * pc.head_dim;
    for (uint c = 0; c < pc.head_dim; ++c) s += LD(q[qa + c]) * LD(table_w[ta + c]);
  }
  rel[e] = ST(s);
}

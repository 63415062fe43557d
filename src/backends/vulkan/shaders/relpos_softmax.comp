#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Softmax over one ViT-Det attention score row per workgroup after adding
// its decomposed relative-position bias: query (i, j) and key (ki, kj) of a
// rows x cols grid get ph[r, i - ki + rows - 1] + pw[r, j - kj + cols - 1],
// where ph and pw hold the query's products with every row of the height
// and width tables (relative_products in ops/fused_encoder.cpp; rows of
// h_stride and w_stride) and r is the query's row of them. Score rows are
// [windows * heads, chunk_rows] of the queries q0 .. q0 + chunk_rows - 1
// (attention runs in chunks of query rows).
// A row of at most KESTREL_ROW_CACHE * 256 scores (a 64x64 grid) is read
// once (softmax_row.glsl); a longer one once per pass.
#include "common.glsl"
#include "rows.glsl"
layout(std430, binding = 0) buffer S { T s[]; };
layout(std430, binding = 1) readonly buffer PH { T ph[]; };
layout(std430, binding = 2) readonly buffer PW { T pw[]; };
layout(push_constant) uniform Push {
  KESTREL_ROW_PUSH
  uint rows, cols;
  uint q0, chunk_rows;
  uint h_stride, w_stride;  // the rows of ph and pw (2 * rows - 1 and 2 * cols - 1, padded)
} pc;

uint base, hb, wb;  // ph's entry for key row ki is hb - ki; pw's for key column kj, wb - kj
float score(uint j) { return LD(s[base + j]) + LD(ph[hb - j / pc.cols]) + LD(pw[wb - j % pc.cols]); }
// Each thread writes only the elements it reads, after its last read of them.
void put(uint j, float e, float m, float sum) { s[base + j] = ST(exp(e - m) / sum); }
#include "softmax_row.glsl"

void main() {
  uint row = pc.row_base + kestrel_row();
  if (row >= pc.row_end) return;  // uniform over the workgroup
  uint n = pc.rows * pc.cols;
  uint query = pc.q0 + row % pc.chunk_rows;
  uint rel_row = (row / pc.chunk_rows) * n + query;
  base = row * n;
  hb = rel_row * pc.h_stride + query / pc.cols + pc.rows - 1;
  wb = rel_row * pc.w_stride + query % pc.cols + pc.cols - 1;
  softmax_row(n, true);  // every key is seen: the maximum is finite
}

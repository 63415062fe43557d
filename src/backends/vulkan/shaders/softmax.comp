#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Softmax / LogSoftmax along one axis, one workgroup per row: the input is
// [outer, n, inner] and row r covers n elements at stride inner. The maximum
// is subtracted before exp; sums accumulate in float32 (softmax_row.glsl).
#include "common.glsl"
#include "rows.glsl"
layout(constant_id = 0) const int LOG = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push { KESTREL_ROW_PUSH uint n; uint inner; } pc;

uint base;  // the row's first element
float score(uint j) { return LD(x[base + j * pc.inner]); }
void put(uint j, float e, float m, float s) {
  y[base + j * pc.inner] = ST(LOG != 0 ? (e - m) - log(s) : exp(e - m) / s);
}
#include "softmax_row.glsl"

void main() {
  uint row = pc.row_base + kestrel_row();
  if (row >= pc.row_end) return;  // uniform over the workgroup
  base = (row / pc.inner) * pc.n * pc.inner + row % pc.inner;
  // A row of all -inf has no finite maximum: shift by 0 (Softmax gives NaN, as defined).
  softmax_row(pc.n, true);
}

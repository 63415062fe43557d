#version 450
#extension GL_GOOGLE_include_directive : require
// Softmax / LogSoftmax along one axis, one workgroup per row: the input is
// [outer, n, inner] and row r covers n elements at stride inner. The maximum
// is subtracted before exp; sums accumulate in float32.
#include "common.glsl"
#include "rows.glsl"
layout(constant_id = 0) const int LOG = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push { KESTREL_ROW_PUSH uint n; uint inner; } pc;

void main() {
  uint row = pc.row_base + kestrel_row();
  if (row >= pc.row_end) return;  // uniform over the workgroup
  uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  uint base = (row / pc.inner) * pc.n * pc.inner + row % pc.inner;
  float m = KESTREL_NEG_INF;
  for (uint j = t; j < pc.n; j += wg) m = max(m, LD(x[base + j * pc.inner]));
  m = kestrel_wg_max(m);
  // A row of all -inf has no finite maximum: shift by 0 (Softmax gives NaN, as defined).
  if (isinf(m)) m = 0.0;
  float s = 0.0;
  for (uint j = t; j < pc.n; j += wg) s += exp(LD(x[base + j * pc.inner]) - m);
  s = kestrel_wg_sum(s);
  if (LOG != 0) {
    float ls = log(s);
    for (uint j = t; j < pc.n; j += wg) y[base + j * pc.inner] = ST((LD(x[base + j * pc.inner]) - m) - ls);
  } else {
    float inv = 1.0 / s;
    for (uint j = t; j < pc.n; j += wg) y[base + j * pc.inner] = ST(exp(LD(x[base + j * pc.inner]) - m) * inv);
  }
}

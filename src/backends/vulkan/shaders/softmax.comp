#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Softmax / LogSoftmax along one axis, one workgroup per row: the input is
// [outer, n, inner] and row r covers n elements at stride inner. The maximum
// is subtracted before exp; sums accumulate in float32. A row of at most
// KESTREL_ROW_CACHE * 256 elements is read once (rows.glsl); a longer one
// once per pass.
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
  const bool cached = pc.n <= KESTREL_ROW_CACHE * wg;
  float v[KESTREL_ROW_CACHE];
  float m = KESTREL_NEG_INF;
  if (cached) {
    [[unroll]] for (uint c = 0; c < KESTREL_ROW_CACHE; ++c) {
      uint j = t + c * wg;
      v[c] = j < pc.n ? LD(x[base + j * pc.inner]) : KESTREL_NEG_INF;
      m = max(m, v[c]);
    }
  } else {
    for (uint j = t; j < pc.n; j += wg) m = max(m, LD(x[base + j * pc.inner]));
  }
  m = kestrel_wg_max(m);
  // A row of all -inf has no finite maximum: shift by 0 (Softmax gives NaN, as defined).
  if (isinf(m)) m = 0.0;
  float s = 0.0;
  if (cached) {
    [[unroll]] for (uint c = 0; c < KESTREL_ROW_CACHE; ++c)
      if (t + c * wg < pc.n) s += exp(v[c] - m);
  } else {
    for (uint j = t; j < pc.n; j += wg) s += exp(LD(x[base + j * pc.inner]) - m);
  }
  s = kestrel_wg_sum(s);
  const float ls = log(s), inv = 1.0 / s;
  if (cached) {
    [[unroll]] for (uint c = 0; c < KESTREL_ROW_CACHE; ++c) {
      uint j = t + c * wg;
      if (j < pc.n) y[base + j * pc.inner] = ST(LOG != 0 ? (v[c] - m) - ls : exp(v[c] - m) * inv);
    }
  } else {
    for (uint j = t; j < pc.n; j += wg) {
      float e = LD(x[base + j * pc.inner]);
      y[base + j * pc.inner] = ST(LOG != 0 ? (e - m) - ls : exp(e - m) * inv);
    }
  }
}

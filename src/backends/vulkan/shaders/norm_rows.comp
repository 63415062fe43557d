#version 450
#extension GL_GOOGLE_include_directive : require
// variant stream32: KESTREL_FLOAT32_STREAM
// LayerNormalization (MODE 0) and InstanceNormalization (MODE 1), one
// workgroup per normalized row of n contiguous elements. Mean, then the
// variance of (x - mean): two passes, no cancellation, float32 sums.
// LayerNorm's scale/bias index the row (modulo their length, for the ones
// that broadcast); InstanceNorm's the channel, row % channels.
#include "common.glsl"
#include "rows.glsl"
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const int HAS_BIAS = 1;
layout(constant_id = 2) const int STATS = 0;  // write Mean and InvStdDev (LayerNorm outputs 1, 2)
layout(std430, binding = 0) readonly buffer X { TS x[]; };
layout(std430, binding = 1) readonly buffer S { T scale[]; };
layout(std430, binding = 2) readonly buffer B { T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { T y[]; };
layout(std430, binding = 4) writeonly buffer M { T mean_out[]; };
layout(std430, binding = 5) writeonly buffer R { T inv_out[]; };
layout(push_constant) uniform Push {
  KESTREL_ROW_PUSH
  uint n;
  uint channels;             // InstanceNorm
  uint scale_len, bias_len;  // LayerNorm: parameter lengths (n, or a trailing part of the row)
  float eps;
} pc;

void main() {
  uint row = pc.row_base + kestrel_row();
  if (row >= pc.row_end) return;  // uniform over the workgroup
  uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  uint base = row * pc.n;
  float s = 0.0;
  for (uint j = t; j < pc.n; j += wg) s += LD(x[base + j]);
  float mean = kestrel_wg_sum(s) / float(pc.n);
  float q = 0.0;
  for (uint j = t; j < pc.n; j += wg) {
    float d = LD(x[base + j]) - mean;
    q += d * d;
  }
  float inv = inversesqrt(kestrel_wg_sum(q) / float(pc.n) + pc.eps);
  if (STATS != 0 && t == 0) {
    mean_out[row] = ST(mean);
    inv_out[row] = ST(inv);
  }
  if (MODE == 1) {
    uint ch = row % pc.channels;
    float k = inv * LD(scale[ch]);
    float b = (HAS_BIAS != 0 ? LD(bias[ch]) : 0.0) - mean * k;
    for (uint j = t; j < pc.n; j += wg) y[base + j] = ST(LD(x[base + j]) * k + b);
  } else {
    for (uint j = t; j < pc.n; j += wg) {
      float v = (LD(x[base + j]) - mean) * inv * LD(scale[j % pc.scale_len]);
      if (HAS_BIAS != 0) v += LD(bias[j % pc.bias_len]);
      y[base + j] = ST(v);
    }
  }
}

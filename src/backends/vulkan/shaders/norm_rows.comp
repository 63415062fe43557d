#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// variant stream32: KESTREL_FLOAT32_STREAM
// variant sg: KESTREL_SUBGROUP_ROWS
// variant stream32sg: KESTREL_FLOAT32_STREAM_SUBGROUP_ROWS
// LayerNormalization (MODE 0) and InstanceNormalization (MODE 1), one
// workgroup per normalized row of n contiguous elements. Mean, then the
// variance of (x - mean): two passes, no cancellation, float32 sums.
// LayerNorm's scale/bias index the row (modulo their length, for the ones
// that broadcast); InstanceNorm's the channel, row % channels. A row of at
// most ROW_HELD elements is read once, into registers; a longer one once
// per pass. The sg variants (rows.glsl: 32 threads and subgroup sums) are
// for rows that short, on devices with subgroup arithmetic.
#ifdef KESTREL_FLOAT32_STREAM_SUBGROUP_ROWS
#define KESTREL_FLOAT32_STREAM 1
#define KESTREL_SUBGROUP_ROWS 1
#endif
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

const uint ROW_HELD = 1024;  // (ops/row_dispatch.h: kNormRowHeld)
const uint HELD = ROW_HELD / gl_WorkGroupSize.x;

// Element j of the row, xv, normalized: InstanceNorm's x * k + b, or
// LayerNorm's (x - mean) * inv * scale + bias. LayerNorm's parameters
// usually span the row (`whole`): no modulo then.
float normalized(float xv, uint j, float mean, float inv, float k, float b, bool whole) {
  if (MODE == 1) return xv * k + b;
  float r = (xv - mean) * inv * LD(scale[whole ? j : j % pc.scale_len]);
  if (HAS_BIAS != 0) r += LD(bias[whole ? j : j % pc.bias_len]);
  return r;
}

void main() {
  uint row = pc.row_base + kestrel_row();
  if (row >= pc.row_end) return;  // uniform over the workgroup
  uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  uint base = row * pc.n;
  const bool held = pc.n <= ROW_HELD;
  float v[HELD];  // element t + wg c in slot c (held rows)
  float s = 0.0;
  if (held) {
    [[unroll]] for (uint c = 0; c < HELD; ++c) {
      uint j = t + c * wg;
      v[c] = j < pc.n ? LD(x[base + j]) : 0.0;
      s += v[c];
    }
  } else {
    for (uint j = t; j < pc.n; j += wg) s += LD(x[base + j]);
  }
  float mean = kestrel_wg_sum(s) / float(pc.n);
  float q = 0.0;
  if (held) {
    [[unroll]] for (uint c = 0; c < HELD; ++c) {
      float d = t + c * wg < pc.n ? v[c] - mean : 0.0;
      q += d * d;
    }
  } else {
    for (uint j = t; j < pc.n; j += wg) {
      float d = LD(x[base + j]) - mean;
      q += d * d;
    }
  }
  float inv = inversesqrt(kestrel_wg_sum(q) / float(pc.n) + pc.eps);
  if (STATS != 0 && t == 0) {
    mean_out[row] = ST(mean);
    inv_out[row] = ST(inv);
  }
  float k = 0.0, b = 0.0;  // InstanceNorm: one scale and bias for the row
  if (MODE == 1) {
    uint ch = row % pc.channels;
    k = inv * LD(scale[ch]);
    b = (HAS_BIAS != 0 ? LD(bias[ch]) : 0.0) - mean * k;
  }
  const bool whole = pc.scale_len == pc.n && pc.bias_len == pc.n;
  if (held) {
    [[unroll]] for (uint c = 0; c < HELD; ++c) {
      uint j = t + c * wg;
      if (j >= pc.n) break;
      y[base + j] = ST(normalized(v[c], j, mean, inv, k, b, whole));
    }
  } else {
    for (uint j = t; j < pc.n; j += wg) y[base + j] = ST(normalized(LD(x[base + j]), j, mean, inv, k, b, whole));
  }
}

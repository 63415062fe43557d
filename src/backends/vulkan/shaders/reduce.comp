#version 450
#extension GL_GOOGLE_include_directive : require
// Reduce* over any set of axes. The host merges adjacent dims with the same
// role, leaving at most 3 kept dims (kdims, kstrides) and 3 reduced ones
// (rdims, rstrides), leading ones padded with size 1. Output g is the
// reduction of the count elements at kept_offset(g) + reduced_offset(j).
// PER_THREAD = 0: one workgroup per output (long reductions, e.g. the last
// axis or the spatial axes of NCHW); 1: one thread per output (short
// reductions, or kept inner dims: neighbouring threads read neighbouring
// elements). Accumulation is float32; LogSumExp keeps (max, sum of exp).
#include "common.glsl"
#include "rows.glsl"
layout(constant_id = 0) const int OP = 0;  // see combine()/finish()
layout(constant_id = 1) const int PER_THREAD = 0;
layout(constant_id = 2) const int ONE_R = 1;  // a single reduced dim: no index decoding
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Push {
  KESTREL_ROW_PUSH
  uint groups, count;
  uint kdims[3], kstrides[3];
  uint rdims[3], rstrides[3];
} pc;

const int SUM = 0, MEAN = 1, MAX = 2, MIN = 3, PROD = 4, L2 = 5, SUMSQ = 6, LSE = 7, L1 = 8, LOGSUM = 9;
#define INF uintBitsToFloat(0x7f800000u)

vec2 init_acc() {
  if (OP == MAX || OP == LSE) return vec2(-INF, 0.0);
  if (OP == MIN) return vec2(INF, 0.0);
  if (OP == PROD) return vec2(1.0, 0.0);
  return vec2(0.0);
}

// NaN wins in Max/Min, as in NumPy.
vec2 combine(vec2 a, vec2 b) {
  if (OP == MAX) return (b.x > a.x || isnan(b.x)) ? b : a;
  if (OP == MIN) return (b.x < a.x || isnan(b.x)) ? b : a;
  if (OP == PROD) return vec2(a.x * b.x, 0.0);
  if (OP == LSE) {
    if (b.y == 0.0) return a;
    if (a.y == 0.0) return b;
    float m = max(a.x, b.x);
    return vec2(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
  }
  return vec2(a.x + b.x, 0.0);
}

// One element as an accumulator of its own.
vec2 lift(float v) {
  if (OP == SUMSQ || OP == L2) return vec2(v * v, 0.0);
  if (OP == L1) return vec2(abs(v), 0.0);
  if (OP == LSE) return isinf(v) && v < 0.0 ? vec2(-INF, 0.0) : vec2(v, 1.0);
  return vec2(v, 0.0);
}

float finish(vec2 a) {
  if (OP == MEAN) return a.x / float(pc.count);
  if (OP == L2) return sqrt(a.x);
  if (OP == LOGSUM) return log(a.x);
  if (OP == LSE) return a.y == 0.0 ? -INF : a.x + log(a.y);
  return a.x;
}

uint kept_offset(uint g) {
  uint o = 0;
  for (int d = 2; d >= 0; --d) {
    o += (g % pc.kdims[d]) * pc.kstrides[d];
    g /= pc.kdims[d];
  }
  return o;
}

uint reduced_offset(uint j) {
  if (ONE_R != 0) return j * pc.rstrides[2];
  uint o = 0;
  for (int d = 2; d >= 0; --d) {
    o += (j % pc.rdims[d]) * pc.rstrides[d];
    j /= pc.rdims[d];
  }
  return o;
}

shared vec2 red[256];

void main() {
  uint row = pc.row_base + kestrel_row();
  if (row >= pc.row_end) return;  // uniform over the workgroup
  uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  if (PER_THREAD != 0) {
    uint g = row * wg + t;
    if (g >= pc.groups) return;
    uint base = kept_offset(g);
    vec2 acc = init_acc();
    for (uint j = 0; j < pc.count; ++j) acc = combine(acc, lift(LD(x[base + reduced_offset(j)])));
    y[g] = ST(finish(acc));
    return;
  }
  uint base = kept_offset(row);
  vec2 acc = init_acc();
  for (uint j = t; j < pc.count; j += wg) acc = combine(acc, lift(LD(x[base + reduced_offset(j)])));
  red[t] = acc;
  barrier();
  for (uint s = wg / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = combine(red[t], red[t + s]);
    barrier();
  }
  if (t == 0) y[row] = ST(finish(red[0]));
}

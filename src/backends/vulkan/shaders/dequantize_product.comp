#version 450
#extension GL_GOOGLE_include_directive : require
// The float output of an exact int32 product (com.microsoft
// MatMulIntegerToFloat and DynamicQuantizeMatMul, ops/
// matmul_integer_to_float.cpp): y[i] = float(acc[i]) * (a_scale *
// b_scale[n]) [+ bias[n]], n the column of i, rounded in the reference's
// order (precise: no fused multiply-add). float32 in both storage variants:
// the ops compute in float32 in every run.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int HAS_BIAS = 0;
layout(constant_id = 1) const int PER_COLUMN = 0;  // b_scale holds one value per column, else one
layout(std430, binding = 0) readonly buffer Acc { int acc[]; };
layout(std430, binding = 1) readonly buffer AScale { float a_scale[]; };
layout(std430, binding = 2) readonly buffer BScale { float b_scale[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH  // n: elements
  uint columns;
} pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  uint col = i % pc.columns;
  precise float s = a_scale[0] * b_scale[PER_COLUMN != 0 ? col : 0];
  precise float v = float(acc[i]) * s;
  if (HAS_BIAS != 0) v = v + bias[col];
  y[i] = v;
}

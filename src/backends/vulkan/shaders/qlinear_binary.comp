#version 450
#extension GL_GOOGLE_include_directive : require
// com.microsoft QLinearAdd (OP 0) and QLinearMul (OP 1) on 8-bit tensors
// packed four to a word, broadcast over up to 6 dims, as ops/
// qlinear_binary.cpp computes them: each value dequantized (scale * (q -
// zero point)), added or multiplied, divided by C's scale, rounded half to
// even, offset by C's zero point, saturated. One output word (four values)
// per invocation, so that each writes a whole word; the division rounded as
// the CPU's (div_rn.glsl). com.kestrel QdqAdd is the addition with the
// activation the fusion folded in (ACT, activation.glsl's number) applied to
// the sum before the division, as ops/qdq_add.cpp applies it. (A GPU's exp
// may round the last bit otherwise than the CPU's: with an activation
// through exp, one step apart at a .5 boundary.)
#include "common.glsl"
#include "div_rn.glsl"
#include "activation.glsl"
#include "packed_bytes.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int OP = 0;
layout(constant_id = 1) const int SIGNED = 0;  // int8, else uint8
layout(constant_id = 2) const int ACT = 0;     // 0: none
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) writeonly buffer C { uint c[]; };
layout(push_constant) uniform Push {
  KESTREL_BROADCAST_PUSH  // n: output words
  uint count;             // output values
  float a_scale, b_scale, c_scale;
  int a_zero, b_zero, c_zero;
  float act_a, act_b;
} pc;


void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  const float lo = SIGNED != 0 ? -128.0 : 0.0, hi = SIGNED != 0 ? 127.0 : 255.0;
  uint packed = 0;
  for (uint k = 0; k < 4; ++k) {
    uint i = 4 * e + k;
    if (i >= pc.count) break;
    uint ia, ib;
    KESTREL_BROADCAST_INDEX(i, ia, ib)
    // precise: no fused multiply-add of a dequantization into the sum (the
    // CPU rounds each product: -ffp-contract=off).
    precise float va = pc.a_scale * float(packed_byte(a[ia >> 2], ia, SIGNED != 0) - pc.a_zero);
    precise float vb = pc.b_scale * float(packed_byte(b[ib >> 2], ib, SIGNED != 0) - pc.b_zero);
    precise float r = div_rn(activate(ACT, OP == 0 ? va + vb : va * vb, pc.act_a, pc.act_b), pc.c_scale);
    float v = clamp(roundEven(r) + float(pc.c_zero), lo, hi);
    packed |= (uint(int(v)) & 0xffu) << (8 * k);
  }
  c[e] = packed;
}

#version 450
#extension GL_GOOGLE_include_directive : require
// QLinearMatMul's and QLinearConv's last step (ops/requantize.h): each exact
// int32 sum, plus its channel's int32 bias where there is one, times its
// multiplier (in_scale * w_scale / out_scale, computed on the host as the
// CPU computes it), rounded half to even, offset by the output's zero point
// and saturated to 8 bits; packed four to a word, one word per invocation so
// that each writes a whole word. Element i takes multiplier
// mult[(i / m_inner) % m_dim] (m_dim 0: mult[0]) and bias[(i / b_inner) %
// b_dim] (b_dim 0: none). Integers and float32 in both storage variants.
//
// With an activation (ACT, a QLinearConv carrying the one the QDQ fusion
// folded into it, ops/conv.cpp): mult holds in_scale * w_scale, each sum
// goes back to its real value, through the activation, then QuantizeLinear's
// arithmetic by out_scale (divided as the CPU divides: div_rn.glsl). A GPU's
// exp may round the last bit otherwise than the CPU's: with an activation
// through exp, one step apart at a .5 boundary.
#include "common.glsl"
#include "div_rn.glsl"
#include "activation.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int SIGNED = 0;  // int8 output, else uint8
layout(constant_id = 1) const int ACT = 0;     // activation.glsl's number; 0: none
layout(std430, binding = 0) readonly buffer Acc { int acc[]; };
layout(std430, binding = 1) readonly buffer Mult { float mult[]; };
layout(std430, binding = 2) readonly buffer Bias { int bias[]; };
layout(std430, binding = 3) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH  // n: words
  uint count;               // values
  uint m_inner, m_dim, b_inner, b_dim;
  int zero_point;
  float out_scale, act_a, act_b;  // with ACT only
} pc;

void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  const float lo = SIGNED != 0 ? -128.0 : 0.0, hi = SIGNED != 0 ? 127.0 : 255.0;
  uint packed = 0;
  for (uint k = 0; k < 4; ++k) {
    uint i = 4 * e + k;
    if (i >= pc.count) break;
    int a = acc[i];
    if (pc.b_dim != 0) a += bias[(i / pc.b_inner) % pc.b_dim];
    float m = mult[pc.m_dim == 0 ? 0 : (i / pc.m_inner) % pc.m_dim];
    // An integer-valued float: past 2^24 it saturates whatever zp adds.
    float v;
    if (ACT == 0) {
      v = clamp(roundEven(float(a) * m) + float(pc.zero_point), lo, hi);
    } else {
      precise float real = div_rn(activate(ACT, float(a) * m, pc.act_a, pc.act_b), pc.out_scale);
      v = clamp(roundEven(real) + float(pc.zero_point), lo, hi);
    }
    packed |= (uint(int(v)) & 0xffu) << (8 * k);
  }
  y[e] = packed;
}

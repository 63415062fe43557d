#version 450
#extension GL_GOOGLE_include_directive : require
// QuantizeLinear (MODE 0): q = saturate(round_half_even(x / scale) + zero
// point), 8 bits packed four to a word, one word per invocation so that
// each writes a whole word; DequantizeLinear (MODE 1): x = (q - zero point)
// * scale, one value per invocation. The scale and zero point are one
// value, or one per index along the axis: element i takes entry
// (i / inner) % dim (ops/quantize_linear.h). The node runs in float32
// (VkOpDef::float32_node), the scales as float32 whatever the session stores.
#include "common.glsl"
#include "div_rn.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const int SIGNED = 0;  // int8, else uint8
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer XQ { uint xq[]; };
layout(std430, binding = 1) readonly buffer S { float scale[]; };
layout(std430, binding = 2) readonly buffer Z { int zero[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 3) writeonly buffer YQ { uint yq[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH  // n: words (MODE 0) or values (MODE 1)
  uint count;               // values
  uint inner, dim;          // dim 0: one scale for the tensor
} pc;

uint param(uint i) { return pc.dim == 0 ? 0 : (i / pc.inner) % pc.dim; }

void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  const float lo = SIGNED != 0 ? -128.0 : 0.0, hi = SIGNED != 0 ? 127.0 : 255.0;
  if (MODE == 0) {
    uint packed = 0;
    for (uint k = 0; k < 4; ++k) {
      uint i = 4 * e + k;
      if (i >= pc.count) break;
      uint p = param(i);
      float v = roundEven(div_rn(x[i], scale[p])) + float(zero[p]);
      v = isnan(v) ? 0.0 : clamp(v, lo, hi);  // NaN: 0, as the reference gives
      packed |= (uint(int(v)) & 0xffu) << (8 * k);
    }
    yq[e] = packed;
  } else {
    uint b = (xq[e / 4] >> (8 * (e % 4))) & 0xffu;
    int q = SIGNED != 0 ? (int(b << 24) >> 24) : int(b);
    uint p = param(e);
    y[e] = float(q - zero[p]) * scale[p];
  }
}

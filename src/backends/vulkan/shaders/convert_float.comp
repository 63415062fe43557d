#version 450
#extension GL_GOOGLE_include_directive : require
// Converts float storage between float16 and float32, for a node whose
// precision differs from its input's producer (mixed precision,
// precision_plan.h). Both sides are read and written as 32-bit words, so
// either variant of this shader does either conversion and no 16-bit
// storage feature is needed.
//   (The modes are FloatConversion in backends/vulkan/op.h.)
//   MODE 0: float16 -> float32, one invocation per element.
//   MODE 1: float32 -> float16, one invocation per output word (two
//           elements; the odd tail's upper half is zero).
//   MODE 2: float32 -> float32, one invocation per element: a float32
//           tensor copied inside a float16 node, whose own copy shader
//           would move float16 elements (a fused encoder's float32 stream).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int MODE = 0;
layout(std430, binding = 0) readonly buffer XW { uint xw[]; };
layout(std430, binding = 0) readonly buffer XF { float xf[]; };
layout(std430, binding = 1) writeonly buffer YW { uint yw[]; };
layout(std430, binding = 1) writeonly buffer YF { float yf[]; };
layout(push_constant) uniform Push { KESTREL_ELEMENTWISE_PUSH uint count; } pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  if (MODE == 0) {
    vec2 h = unpackHalf2x16(xw[i >> 1]);
    yf[i] = (i & 1u) == 0u ? h.x : h.y;
  } else if (MODE == 2) {
    yw[i] = xw[i];
  } else {
    uint j = 2u * i;
    float hi = j + 1u < pc.count ? xf[j + 1u] : 0.0;
    yw[i] = packHalf2x16(vec2(xf[j], hi));
  }
}

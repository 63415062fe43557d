#version 450
#extension GL_GOOGLE_include_directive : require
// com.microsoft QLinearGlobalAveragePool as ops/qlinear_global_average_pool.cpp
// computes it: each (image, channel)'s int32 sum of its bytes (packed four to
// a word), less the zero point's share, times the host's multiplier in
// float, rounded half to even, offset, saturated. Four outputs (one word)
// per invocation, each summing its image serially: the images these
// classifier heads pool are a few dozen values.
#include "common.glsl"
#include "packed_bytes.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const int SIGNED = 0;         // int8, else uint8
layout(constant_id = 1) const int CHANNELS_LAST = 0;  // [N, spatial..., C], else [N, C, spatial...]
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH  // n: output words
  uint count;               // outputs (N * C)
  uint channels, image;
  int x_zero, y_zero;
  float multiplier;
} pc;


void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  const float lo = SIGNED != 0 ? -128.0 : 0.0, hi = SIGNED != 0 ? 127.0 : 255.0;
  uint packed = 0;
  for (uint k = 0; k < 4; ++k) {
    uint p = 4 * e + k;
    if (p >= pc.count) break;
    uint n = p / pc.channels, c = p % pc.channels;
    uint first = CHANNELS_LAST != 0 ? n * pc.image * pc.channels + c : p * pc.image;
    uint step = CHANNELS_LAST != 0 ? pc.channels : 1u;
    int sum = 0;
    for (uint at = first, i = 0; i < pc.image; ++i, at += step) sum += packed_byte(x[at >> 2], at, SIGNED != 0);
    sum -= pc.x_zero * int(pc.image);
    float v = clamp(roundEven(float(sum) * pc.multiplier) + float(pc.y_zero), lo, hi);
    packed |= (uint(int(v)) & 0xffu) << (8 * k);
  }
  y[e] = packed;
}

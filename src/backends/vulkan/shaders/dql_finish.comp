#version 450
#extension GL_GOOGLE_include_directive : require
// DynamicQuantizeLinear, pass 2 (one workgroup): the global range, then
// scale = (max - min) / 255 and zero point = saturate(round(-min / scale)).
// params[0..1] keep them in float32 for pass 3; y_scale and y_zero_point are
// the op's outputs (y_zero_point: one uint8 in a packed word).
#include "common.glsl"
#include "div_rn.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer P { float partial[]; };
layout(std430, binding = 1) writeonly buffer Q { float params[]; };
layout(std430, binding = 2) writeonly buffer S { T y_scale[]; };
layout(std430, binding = 3) writeonly buffer Z { uint y_zero_point[]; };
layout(push_constant) uniform Push { uint groups; } pc;
shared float lo[256];
shared float hi[256];

void main() {
  uint t = gl_LocalInvocationID.x;
  float a = 0.0, b = 0.0;
  for (uint i = t; i < pc.groups; i += 256) {
    a = min(a, partial[2 * i]);
    b = max(b, partial[2 * i + 1]);
  }
  lo[t] = a;
  hi[t] = b;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) {
      lo[t] = min(lo[t], lo[t + s]);
      hi[t] = max(hi[t], hi[t + s]);
    }
    barrier();
  }
  if (t == 0) {
    float scale = div_rn(hi[0] - lo[0], 255.0);
    float zp = scale == 0.0 ? 0.0 : clamp(roundEven(0.0 - div_rn(lo[0], scale)), 0.0, 255.0);
    params[0] = scale;
    params[1] = zp;
    y_scale[0] = ST(scale);
    y_zero_point[0] = uint(zp);
  }
}

#version 450
#extension GL_GOOGLE_include_directive : require
// com.microsoft QLinearAveragePool over 1-D or 2-D windows (1-D as H = 1),
// 8-bit tensors packed four to a word, as ops/pool.cpp computes it: each
// in-bounds tap dequantized (x_scale * (q - x_zero)) and summed in float in
// the window's row order, divided by the taps counted as pool.comp counts
// them, then quantized as QuantizeLinear does (divided by y_scale, rounded
// half to even, offset by y_zero, saturated; NaN to 0). One output word per
// invocation, so that each writes a whole word. Both divisions are IEEE's
// (div_rn.glsl), as the CPU's.
#include "common.glsl"
#include "div_rn.glsl"
#include "packed_bytes.glsl"
#include "pool_window.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int COUNT_PAD = 0;
layout(constant_id = 1) const int SIGNED = 0;  // int8, else uint8
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH  // n: output words
  KESTREL_POOL_WINDOW_PUSH
  uint count;  // output values
  float x_scale, y_scale;
  int x_zero, y_zero;
} pc;


void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  const float lo = SIGNED != 0 ? -128.0 : 0.0, hi = SIGNED != 0 ? 127.0 : 255.0;
  uint packed = 0;
  for (uint k = 0; k < 4; ++k) {
    uint i = 4 * e + k;
    if (i >= pc.count) break;
    int r = int(i);
    int ow = r % pc.OW; r /= pc.OW;
    int oh = r % pc.OH;
    int xbase = (r / pc.OH) * pc.H * pc.W;
    int ih0 = oh * pc.SH - pc.PH, iw0 = ow * pc.SW - pc.PW;
    // precise: each dequantized tap rounded before it is added (the CPU
    // kernel is built without contraction).
    precise float acc = 0.0;
    int taps = 0;
    for (int kh = 0; kh < pc.KH; ++kh) {
      int ih = ih0 + kh * pc.DH;
      if (ih < 0 || ih >= pc.H) continue;
      for (int kw = 0; kw < pc.KW; ++kw) {
        int iw = iw0 + kw * pc.DW;
        if (iw < 0 || iw >= pc.W) continue;
        uint at = uint(xbase + ih * pc.W + iw);
        precise float v = pc.x_scale * float(packed_byte(x[at >> 2], at, SIGNED != 0) - pc.x_zero);
        acc += v;
        ++taps;
      }
    }
    if (COUNT_PAD != 0) taps = KESTREL_PADDED_WINDOW_TAPS(ih0, iw0);
    precise float real = taps > 0 ? div_rn(acc, float(taps)) : 0.0;
    float v = roundEven(clamp(div_rn(real, pc.y_scale), -4194304.0, 4194304.0)) + float(pc.y_zero);
    v = isnan(v) ? 0.0 : clamp(v, lo, hi);  // NaN: 0, as QuantizeLinear gives
    packed |= (uint(int(v)) & 0xffu) << (8 * k);
  }
  y[e] = packed;
}

#version 450
#extension GL_GOOGLE_include_directive : require
// Cast between float storage (T) and int32 storage (integers, booleans).
// Casts between equal storage are aliases on the host; MODE picks the rest:
//   0 float -> float16 values kept in float32 storage (round to nearest even)
//   1 float -> int (truncation toward zero)   2 int -> float
//   3 float -> bool (NaN is true)             4 int -> bool
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int MODE = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 0) readonly buffer Xi { int xi[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(std430, binding = 1) writeonly buffer Yi { int yi[]; };
layout(push_constant) uniform Push { KESTREL_ELEMENTWISE_PUSH } pc;

// v rounded to the nearest float16 value (ties to even), as float32. Every
// step is exact but the one roundEven, so it matches a hardware conversion.
float round_to_half(float v) {
  float a = abs(v);
  if (isnan(v) || isinf(v)) return v;
  if (a >= 65520.0) return v < 0.0 ? -1.0 / 0.0 : 1.0 / 0.0;
  if (a < 6.103515625e-05) return roundEven(v * 16777216.0) / 16777216.0;  // subnormal: quantum 2^-24
  int e;
  frexp(a, e);  // a = m * 2^e, m in [0.5, 1): 11 significant bits below 2^e
  float q = ldexp(1.0, e - 11);
  return roundEven(v / q) * q;
}

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  if (MODE == 0) y[i] = ST(round_to_half(LD(x[i])));
  else if (MODE == 1) yi[i] = int(LD(x[i]));
  else if (MODE == 2) y[i] = ST(float(xi[i]));
  else if (MODE == 3) { float v = LD(x[i]); yi[i] = (v != 0.0 || isnan(v)) ? 1 : 0; }
  else yi[i] = xi[i] != 0 ? 1 : 0;
}

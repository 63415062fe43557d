#version 450
#extension GL_GOOGLE_include_directive : require
// c = a OP b with NumPy broadcasting over up to 6 dims (strides of 0 along
// broadcast dims). BCAST = 0 when a, b and c have one shape: no index math.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int OP = 0;
layout(constant_id = 1) const int BCAST = 1;
layout(std430, binding = 0) readonly buffer A { T a[]; };
layout(std430, binding = 1) readonly buffer B { T b[]; };
layout(std430, binding = 2) writeonly buffer C { T c[]; };
layout(push_constant) uniform Push { KESTREL_BROADCAST_PUSH } pc;

float op(float x, float y) {
  switch (OP) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return x / y;
    case 4: {  // Pow: integral exponents of negative bases, as std::pow
      if (x < 0.0 && y == floor(y)) {
        float r = pow(-x, y);
        return mod(y, 2.0) == 0.0 ? r : -r;
      }
      return y == 0.0 ? 1.0 : pow(x, y);
    }
    case 5: return (isnan(x) || isnan(y)) ? x + y : max(x, y);
    case 6: return (isnan(x) || isnan(y)) ? x + y : min(x, y);
    case 7: return x < 0.0 ? x * y : x;          // PRelu (b is the slope)
    case 8: return x - y * trunc(x / y);         // Mod fmod=1 (C fmod)
    case 9: { float r = x - y * floor(x / y); return r; }  // Mod fmod=0 for floats (sign of divisor)
  }
  return 0.0;
}

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  uint ia = i, ib = i;
  if (BCAST != 0) KESTREL_BROADCAST_INDEX(i, ia, ib)
  c[i] = ST(op(LD(a[ia]), LD(b[ib])));
}

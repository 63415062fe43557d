#version 450
#extension GL_GOOGLE_include_directive : require
// Rows moved through a map: y's row r is x's row map[r], zeros where
// map[r] < 0. A padding-free encoder packs its live tokens' rows with it and
// unpacks them onto the [batch, tokens] grid (families/encoder_schedule.h).
// Rows move as 32-bit words, or with WIDE as 16-byte words (the host checks
// the rows and bindings allow it): no arithmetic on the values, so either
// precision's variant moves either precision's rows.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int WIDE = 0;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(std430, binding = 0) readonly buffer X4 { uvec4 x4[]; };
layout(std430, binding = 1) writeonly buffer Y4 { uvec4 y4[]; };
layout(std430, binding = 2) readonly buffer Map { int map[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH  // n = y's rows * units
  uint units;               // words of a row
} pc;

void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  uint r = e / pc.units, c = e % pc.units;
  int from = map[r];
  if (WIDE != 0) y4[e] = from >= 0 ? x4[uint(from) * pc.units + c] : uvec4(0);
  else y[e] = from >= 0 ? x[uint(from) * pc.units + c] : 0u;
}

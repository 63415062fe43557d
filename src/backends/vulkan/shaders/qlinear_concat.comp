#version 450
#extension GL_GOOGLE_include_directive : require
// com.microsoft QLinearConcat on 8-bit tensors packed four to a word:
// MODE 0 zeroes the output's words; MODE 1 moves one input into its place,
// each byte through the input's table of its 256 values (the host builds it
// as the CPU does: requantized to the output's scale and zero point, or the
// identity where they are the output's). An input's bytes rarely start on a
// word of the output, and two inputs (or two rows of one) may share a word,
// so each byte is OR-ed into the zeroed output atomically.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int MODE = 1;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer Table { int table[]; };
layout(std430, binding = 2) buffer Y { uint y[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH  // n: words (of the output in MODE 0, of the input in MODE 1)
  uint count;               // the input's bytes
  uint row, out_row, at;    // an input row's bytes, an output row's, where the input's start in it
} pc;

void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  if (MODE == 0) {
    y[e] = 0u;
    return;
  }
  uint word = x[e];
  for (uint k = 0; k < 4; ++k) {
    uint i = 4 * e + k;
    if (i >= pc.count) break;
    uint o = i / pc.row, r = i % pc.row;
    uint dst = o * pc.out_row + pc.at + r;
    uint b = uint(table[(word >> (8 * k)) & 0xffu]) & 0xffu;
    if (b != 0u) atomicOr(y[dst >> 2], b << (8 * (dst & 3u)));
  }
}

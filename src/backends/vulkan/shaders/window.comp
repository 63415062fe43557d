#version 450
#extension GL_GOOGLE_include_directive : require
// Moves rows of channels between a grid [batch, height, width] and its
// windows [batch, per_row, per_col, rows, cols] (ViT-Det's window partition
// over the grid padded up to a multiple of the window). SCATTER = 0
// gathers the windows from the grid, zeros where a window passes the
// grid's edge; SCATTER = 1 writes the windows back, dropping those rows.
// With WORDS, a row's bytes move 16 at a time (8 channels in float16, 4 in
// float32; the host checks the rows and bindings allow it): `channels`
// counts those words, and the index arithmetic, not the bytes, had been
// most of this kernel's time (SAM ViT-B's 16 moves took 0.37 ms on an H100).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int SCATTER = 0;
layout(constant_id = 1) const int WORDS = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(std430, binding = 0) readonly buffer X4 { uvec4 x4[]; };
layout(std430, binding = 1) writeonly buffer Y4 { uvec4 y4[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH  // n = window rows * channels
  uint height, width, channels, rows, cols, per_row, per_col;
} pc;

void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  uint r = e / pc.channels, c = e % pc.channels;
  uint tokens = pc.rows * pc.cols, per_image = pc.per_row * pc.per_col;
  uint w = r / tokens, t = r % tokens;
  uint b = w / per_image, wr = (w % per_image) / pc.per_col, wc = w % pc.per_col;
  uint gr = wr * pc.rows + t / pc.cols, gc = wc * pc.cols + t % pc.cols;
  bool inside = gr < pc.height && gc < pc.width;
  uint g = ((b * pc.height + gr) * pc.width + gc) * pc.channels + c;
  if (WORDS != 0) {
    if (SCATTER == 0) y4[e] = inside ? x4[g] : uvec4(0);
    else if (inside) y4[g] = x4[e];
  } else if (SCATTER == 0) {
    y[e] = inside ? x[g] : T(0.0);
  } else if (inside) {
    y[g] = x[e];
  }
}

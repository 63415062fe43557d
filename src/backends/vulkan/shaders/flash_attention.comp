#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Flash attention on plain arithmetic (flash_attention_common.glsl): a
// workgroup of 64 threads, one query each, its query and context rows in
// registers (HD floats each); BC keys at a time staged in shared memory
// with each thread's BC scores (the host keeps all of it within 16 KB,
// Vulkan's minimum), each key's dot product and value row read from there
// by every thread. Per tile of keys: its scores, the tile's maximum, one
// rescale of the running sum and context, then the exponentials and their
// value rows. Only the loops over the head dim are unrolled (the registers
// stay registers); unrolling the keys too took lavapipe a minute to compile.
// Devices without cooperative matrices run this, and float32 sessions.
#include "flash_attention_common.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 3) const int BC = 16;  // keys per tile
shared float Ks[BC * HD];
shared float Vs[BC * HD];
shared float Ss[64 * (BC + 1)];  // a row of BC scores per thread, padded against bank conflicts

void main() {
  uint q0 = flash_begin();
  uint t = gl_LocalInvocationID.x, i = q0 + t;
  bool live = i < pc.tokens;
  float qr[HD], acc[HD];
  [[unroll]] for (uint c = 0; c < HD; ++c) {
    qr[c] = live ? LD(q[qkv_base + i * width + c]) : 0.0;
    acc[c] = 0.0;
  }
  flash_query(i);
  const uint srow = t * (BC + 1);
  float m = FLASH_NEG_INF, l = 0.0;
  uint first, end;
  if (!key_range(q0, BC, first, end)) return;  // (uniform in the workgroup: KEY_ENDS)
  for (uint k0 = first; k0 < end; k0 += BC) {
    barrier();  // every thread is done with the previous tile
    for (uint e = t; e < BC * HD; e += 64) {
      uint j = k0 + e / HD, c = e % HD;
      bool in_range = j < pc.tokens;
      Ks[e] = in_range ? LD(k[qkv_base + j * width + c]) : 0.0;
      Vs[e] = in_range ? LD(v[qkv_base + j * width + c]) : 0.0;
    }
    barrier();
    if (!live) continue;
    float tile_max = FLASH_NEG_INF;
    [[dont_unroll]] for (uint j = 0; j < BC; ++j) {
      float dot = 0.0;
      [[unroll]] for (uint c = 0; c < HD; ++c) dot += qr[c] * Ks[j * HD + c];
      float s = flash_score(dot, i, k0 + j);
      Ss[srow + j] = s;
      tile_max = max(tile_max, s);
    }
    float m_new = max(m, tile_max);
    if (isinf(m_new)) continue;  // no key seen yet
    float alpha = exp(m - m_new);  // exp(-inf) = 0 on the first seen tile
    l *= alpha;
    [[unroll]] for (uint c = 0; c < HD; ++c) acc[c] *= alpha;
    [[dont_unroll]] for (uint j = 0; j < BC; ++j) {
      float p = exp(Ss[srow + j] - m_new);
      l += p;
      [[unroll]] for (uint c = 0; c < HD; ++c) acc[c] += p * Vs[j * HD + c];
    }
    m = m_new;
  }
  if (!live) return;
  uint dst = qkv_base + i * width;
  if (isinf(m)) {
    for (uint c = 0; c < HD; ++c) o[dst + c] = ST(flash_unseen(c));
  } else {
    float inv = 1.0 / l;
    [[unroll]] for (uint c = 0; c < HD; ++c) o[dst + c] = ST(acc[c] * inv);
  }
}

// com.microsoft MatMulNBits' 4-bit weights, dequantized where a GEMM loads
// its B operand (ops/matmul_nbits.cpp on the Vulkan side): the packed
// blocks stay packed in memory, 8 weights to a 32-bit word, and each value
// is (q - zero point) * scale as the reference dequantizes it (ops/
// matmul_nbits.cpp), in float32, before it meets A.
//
// B[k, n] is W[n, k]: column n's K weights, in blocks of NB_BLOCK along k,
// packed from the lowest bits up; block b of column n starts at byte
// (n * blocks + b) * NB_BLOCK / 2. Scales: [N, blocks]; zero points (where
// NB_HAS_ZP): packed as B is, ceil(blocks / 2) bytes per column, else 8.
//
// The includer has declared the push constants (pc.K, pc.N: gemm_push.glsl
// or its own) and T / LD (common.glsl).
layout(constant_id = 8) const int NB_BLOCK = 32;  // a power of 2, at least 16: a block is whole words
layout(constant_id = 9) const int NB_HAS_ZP = 0;
layout(std430, binding = 1) readonly buffer NbitsB_ { uint nb_words[]; };
layout(std430, binding = 5) readonly buffer NbitsScales_ { T nb_scales[]; };
layout(std430, binding = 6) readonly buffer NbitsZeros_ { uint nb_zero_words[]; };

uint nb_blocks() { return (pc.K + uint(NB_BLOCK) - 1) / uint(NB_BLOCK); }

// The 4-bit value at byte `byte`, upper half if `high`, of a packed array.
uint nb_nibble(uint word, uint byte, bool high) { return (word >> ((byte & 3u) * 8u + (high ? 4u : 0u))) & 15u; }

// Column n's zero point and scale for block b.
float nb_zero(uint n, uint b) {
  if (NB_HAS_ZP == 0) return 8.0;
  uint byte = n * ((nb_blocks() + 1u) / 2u) + b / 2u;
  return float(nb_nibble(nb_zero_words[byte >> 2], byte, (b & 1u) != 0u));
}
float nb_scale(uint n, uint b) { return LD(nb_scales[n * nb_blocks() + b]); }

// B[k, n]: zero outside K x N.
float nbits_weight(uint k, uint n) {
  if (k >= pc.K || n >= pc.N) return 0.0;
  uint b = k / uint(NB_BLOCK);
  uint byte = (n * nb_blocks() + b) * uint(NB_BLOCK / 2) + (k % uint(NB_BLOCK)) / 2u;
  float q = float(nb_nibble(nb_words[byte >> 2], byte, (k & 1u) != 0u));
  return (q - nb_zero(n, b)) * nb_scale(n, b);
}

// B[k .. k + 7, n] (k a multiple of 8, so one word of one block), those
// past K zero; all zero past N.
void nbits_weights8(uint k, uint n, out float w[8]) {
  [[unroll]] for (uint h = 0; h < 8; ++h) w[h] = 0.0;
  if (k >= pc.K || n >= pc.N) return;
  uint b = k / uint(NB_BLOCK);
  uint word = nb_words[((n * nb_blocks() + b) * uint(NB_BLOCK / 2) + (k % uint(NB_BLOCK)) / 2u) >> 2];
  float z = nb_zero(n, b), s = nb_scale(n, b);
  [[unroll]] for (uint h = 0; h < 8; ++h)
    if (k + h < pc.K) w[h] = (float((word >> (4u * h)) & 15u) - z) * s;
}

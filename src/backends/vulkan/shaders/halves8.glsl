// Eight floats as 16 bytes of float16 pairs: the unit in which the
// tensor-core kernels (coop_tile_body.glsl's includers, flash_attention_coop)
// stage their operands. The includer enables the float16 arithmetic types.
uvec4 pack_halves8(float v[8]) {
  return uvec4(packFloat2x16(f16vec2(v[0], v[1])), packFloat2x16(f16vec2(v[2], v[3])),
               packFloat2x16(f16vec2(v[4], v[5])), packFloat2x16(f16vec2(v[6], v[7])));
}

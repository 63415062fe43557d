// 8-bit tensors packed four to a 32-bit word (the quantized kernels' int8
// and uint8 bindings): byte i's value, sign- or zero-extended.
int packed_byte(uint word, uint i, bool signed_) {
  int shift = int(i & 3u) * 8;
  return signed_ ? bitfieldExtract(int(word), shift, 8) : int(bitfieldExtract(word, shift, 8));
}

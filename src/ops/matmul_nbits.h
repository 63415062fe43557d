// com.microsoft MatMulNBits' weights (ops/matmul_nbits.cpp): the one
// dequantization of its packed blocks, shared by the reference kernel (on
// each run) and the CPU backend (a panel of columns at a time, for products
// of many rows: backends/cpu/matmul_nbits.cpp).
#pragma once
#include <cstdint>

namespace kestrel::ops {

// Columns [n0, n1) of W [N, K] (row n at w + n * K): (q - zero point) *
// scale, q the `bits`-wide values of B [N, blocks, block * bits / 8] packed
// from the lowest bits up, scales [N, blocks], zp packed as B is per column
// (null: 2^(bits - 1)). The caller has checked the sizes.
void nbits_to_float(int64_t K, int64_t bits, int64_t block, const uint8_t* b, const float* scales, const uint8_t* zp,
                    int64_t n0, int64_t n1, float* w);

}  // namespace kestrel::ops

// MatMulNBits' 4-bit weights dequantized a panel of columns at a time, for
// products of more rows than nbits_rows.h takes (a prompt): the float
// product (oneDNN's) then reuses each dequantized weight across every row,
// and no float copy of the whole matrix is kept while the model runs (a
// model's 4-bit weights take in memory what they take in the file).
//
// The panel is [k, n], as a float MatMul's weight is: oneDNN multiplied the
// transposed layout ([n, k], the blocks' own order) 4x slower at 16 rows,
// so the columns are transposed as they are dequantized, 8 at a time.
#pragma once
#include <cstdint>

#include "core/cpu_isa.h"

namespace kestrel::backends::cpu {

// 4-bit W [N, K] as MatMulNBits holds it: B [N, blocks, block / 2] (low
// nibble first), scales [N, blocks], zp packed as B is per column (null: 8).
struct Nbits4Weights {
  int64_t K = 0, block = 0;
  const uint8_t* b = nullptr;
  const float* scales = nullptr;
  const uint8_t* zp = nullptr;
};

// panel[k * ldp + (n - n0)] = W[n, k] for n in [n0, n1), k < K, as
// float(q - zero point) * scale, as the reference dequantizes (the same
// floats): 8 columns at a time on AVX2 where `isa` has it,
// else (and for the last columns) a portable loop.
void nbits4_panel(const Nbits4Weights& w, int64_t n0, int64_t n1, float* panel, int64_t ldp, CpuIsa isa = cpu_isa());

namespace nbits_avx2 {
// Columns n0 .. n0 + 7: each block's whole groups of 16 along k (the rest
// of a block is left to the portable loop).
void panel8(const Nbits4Weights& w, int64_t n0, float* panel, int64_t ldp);
}

}  // namespace kestrel::backends::cpu

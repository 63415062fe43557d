// MatMulNBits for a few rows of A (a decoder's token) straight from the
// 4-bit blocks, each weight unpacked in registers. One row's product reads
// each weight once, so reading half a byte instead of a float32 weight
// saves most of the memory traffic; what is
// left is arithmetic, so each block's scale and zero point are applied once
// per block, not once per weight:
//   sum_j a_j (q_j - z) s = s (sum_j a_j q_j - z sum_j a_j),
// the sums of A per block computed once per call (NbitsRows::prepare). This
// rounds differently from the reference's product with its dequantized
// weights (ops/matmul_nbits.h), by float32 rounding of the sums alone.
#pragma once
#include <cstdint>
#include <vector>

#include "core/cpu_isa.h"

namespace kestrel::backends::cpu {

// Column n's zero point for block blk of `blocks`, zp packed as B is per
// column (null: 8). (The AVX2 files spell it out: they use no function from
// a header, so no copy compiled for AVX2 is shared with baseline code.)
inline int32_t nbits4_zero_point(const uint8_t* zp, int64_t n, int64_t blk, int64_t blocks) {
  return zp ? (zp[n * ((blocks + 1) / 2) + blk / 2] >> (4 * (blk % 2))) & 15 : 8;
}

// Rows at most for nbits4_rows: past them the float product on panels of
// dequantized columns (matmul_nbits.cpp) reuses each weight across rows.
constexpr int64_t kNbitsRowsAtMost = 4;

// One product: A [M, K] (M at most kNbitsRowsAtMost) times W [N, K]^T, W
// from B [N, blocks, block / 2] (4-bit, low nibble first), scales [N,
// blocks], zp packed as B is per column (null: 8).
struct NbitsRows {
  int64_t M = 0, K = 0, block = 0;
  const float* a = nullptr;
  const uint8_t* b = nullptr;
  const float* scales = nullptr;
  const uint8_t* zp = nullptr;
  // Filled by prepare(): each row of A with every 16 k of a whole group of
  // 16 reordered as the 8 even then the 8 odd (a byte's low and high
  // nibbles), and each row's sum over each block's whole groups.
  std::vector<float> pairs, sums;
  void prepare();
};

// y[m * ldy + n] = sum_k a[m, k] W[n, k] for m < M, n in [n0, n1), on the
// AVX2 kernel where `isa` has it, else a portable loop.
void nbits4_rows(const NbitsRows& r, int64_t n0, int64_t n1, float* y, int64_t ldy, CpuIsa isa = cpu_isa());

namespace nbits_avx2 {
// (whole groups of 16 along k with the per-block factoring; the portable
// loop finishes each block's tail.)
void rows(int64_t M, int64_t K, int64_t block, const float* pairs, const float* sums, const uint8_t* b,
          const float* scales, const uint8_t* zp, int64_t n, float* acc);
}

}  // namespace kestrel::backends::cpu

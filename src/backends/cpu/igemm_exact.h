// Exact integer GEMM for the 8-bit ops (ConvInteger, MatMulInteger,
// QLinearConv, QLinearMatMul) on the float SGEMM.
//
// The operands are 8-bit values minus their zero points, so every entry lies
// in [-255, 255]. A is split as A = 16 * A_hi + A_lo with A_lo in [0, 15] and
// A_hi in [-16, 15]; then every product with B is at most 255 * 16 = 4080 in
// magnitude, and a sum of up to 4096 of them stays below 2^24 = 16,777,216,
// where float holds every integer exactly. Whatever order the GEMM adds in,
// each partial sum is a sum of some of those terms, so it is exact too. Each
// K block of at most 4096 therefore gives exact integer results, which are
// combined in int32 as 16 * hi + lo.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/common.h"

namespace kestrel::backends::cpu {

constexpr int64_t kExactKBlock = 4096;

// A (M x K, row-major, entries in [-255, 255]) as the two float halves.
struct SplitOperand {
  int64_t rows = 0, cols = 0;
  std::vector<float> hi, lo;
};
SplitOperand split_operand(const int32_t* a, int64_t rows, int64_t cols);

// C[M, N] (ldc) = A[M, K] * B[K, N] (B float, ldb; entries in [-255, 255]),
// exactly, on the calling thread. A is rows [m0, m0 + M) of `a`.
void igemm_exact_serial(const SplitOperand& a, int64_t m0, int64_t M, int64_t N, const float* B, int64_t ldb,
                        int32_t* C, int64_t ldc);

}  // namespace kestrel::backends::cpu

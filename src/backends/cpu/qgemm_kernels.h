// The u8 x s8 matrix product of the CPU's quantized MatMuls (matmul.cpp,
// matmul_integer_to_float.cpp, through qgemm_product.h) with its epilogue:
// the zero-point terms added, then each sum written as int32, requantized to
// 8 bits as ops::requantize does, or scaled to float. On AVX-512 VNNI
// (qgemm_kernels_avx512.cpp), on AVX2 (qgemm_kernels_avx2.cpp) and on arm64's
// dot product (qgemm_kernels_neon.cpp), each
// compiled for its level and called only where the CPU reports it
// (core/cpu_isa.h); like qconv_kernels_avx512.cpp the files use nothing
// from a header but intrinsics.
#pragma once
#include <cstdint>

namespace kestrel::backends::cpu {

// Columns of B in a panel (one 512-bit register of int32 sums).
constexpr int64_t kPanelColumns = 16;

// What becomes of sum[m, n] = sum_k A[m, k] P[k, n]: the int32 value
//   v = sum + col_add[n] + row_sums[m] * row_scale[n]   (wrapping as int32)
// (row_scale null: no such term), then either stored to y32, or requantized
// into y8 (uint8 unless y_signed): round-half-even(float(v) * mult[n or 0])
// + zero_point, saturated, or scaled into yf: float(v) * mult[n or 0], then
// + bias[n] where there is a bias (two roundings, never fused: the files are
// compiled without contraction).
struct QGemmEpilogue {
  const int32_t* col_add = nullptr;
  const int32_t* row_scale = nullptr;
  const int32_t* row_sums = nullptr;
  int32_t* y32 = nullptr;
  void* y8 = nullptr;
  float* yf = nullptr;
  const float* bias = nullptr;
  bool y_signed = false;
  const float* mult = nullptr;
  bool mult_per_column = false;
  int32_t zero_point = 0;
  int64_t ldy = 0;  // elements between rows of y
};

namespace qgemm_avx512 {
// Rows [m0, m1) and columns [n0, n1) of the product (n0 a multiple of
// kPanelColumns): A is u8 rows of lda bytes, K4 * 4 of them read; P is all
// of B as s8 panels [ceil(N / 16)][K4][16][4] (four consecutive k of a
// column together, qgemm_panels.h).
void qgemm_u8s8(int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K4, const uint8_t* A, int64_t lda,
                const int8_t* P, const QGemmEpilogue& e);
}  // namespace qgemm_avx512

namespace qgemm_avx2 {
// The same product on AVX2, which has no 8-bit dot product that cannot
// saturate (vpmaddubsw saturates to int16): A comes widened to int16 rows
// of lda values (A16), and each B byte is sign-extended as it is loaded,
// so vpmaddwd sums pairs of int16 products exactly into int32.
void qgemm_u8s8(int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K4, const int16_t* A16, int64_t lda,
                const int8_t* P, const QGemmEpilogue& e);
}  // namespace qgemm_avx2

namespace qgemm_neon {  // arm64 with the 8-bit dot product (cpu_arm_dotprod()) only
// The same product with SDOT, which multiplies signed bytes: A's bytes are
// taken as U - 128, so e.col_add must carry 128 * sum_k w'[k, n] more.
void qgemm_u8s8(int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K4, const uint8_t* A, int64_t lda,
                const int8_t* P, const QGemmEpilogue& e);
}  // namespace qgemm_neon

}  // namespace kestrel::backends::cpu

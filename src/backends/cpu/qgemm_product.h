// One 8-bit matrix product as the CPU's quantized MatMuls run it (matmul.cpp:
// QLinearMatMul, MatMulInteger; matmul_integer_to_float.cpp): A's rows as
// stored times B's panels (packed at load, qmatmul_weight_packing.h, or
// here) on the products of qgemm_kernels.h, zero points of any value,
// the epilogue given. Only where qgemm_available(); the kernels take the
// reference elsewhere.
#pragma once
#include <cstdint>
#include <vector>

#include "backends/cpu/qgemm_kernels.h"
#include "ops/common.h"

namespace kestrel::backends::cpu {

// AVX2 or more at the level the kernels use (x86-64 builds only; AVX-512
// VNNI where the CPU has it).
bool qgemm_available();

struct QGemmProblem {
  int64_t rows = 0, K = 0, N = 0;          // A [rows, K] times B [K, N]
  const uint8_t* a = nullptr;              // A's bytes as stored, rows of K
  bool a_signed = false;                   // int8 A (else uint8)
  int32_t a_zero = 0;
  const uint8_t* b = nullptr;              // B's bytes as stored, [K, N]
  bool b_unsigned = false;                 // uint8 B (else int8)
  std::vector<int32_t> b_zero;             // one, or one per column
};

// The zero points into q (its N set) where the product takes them: A's
// (null: 0) one value of A's type, B's (null: 0) one or one per column of
// B's type; false otherwise (the reference kernel then runs).
bool read_zero_points(const Tensor* az, DType a_type, const Tensor* bz, DType b_type, QGemmProblem& q);

// The panels of B, packed at load, from the node's kPackedWeightsAttr
// inputs where it has them, else built from p.b now.
void run_qgemm(ops::KernelContext& ctx, const QGemmProblem& p, QGemmEpilogue e);

}  // namespace kestrel::backends::cpu

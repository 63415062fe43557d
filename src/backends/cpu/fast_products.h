// The CPU backend's matrix products (ops/products.h): oneDNN's SGEMM, the
// narrow AVX2/AVX-512 kernels for products with one side at most 8 wide
// (narrow_gemm.h), and exact int32 products on oneDNN's u8 x s8 GEMM where
// the CPU has VNNI and the operands fit, else on the float SGEMM
// (igemm_exact.h). The executor hands them to the kernels it runs, unless
// the session asks for the reference kernels; tests/cpu_products_test.cpp
// checks them against ops::reference_products().
#pragma once
#include <cstdint>

#include "ops/products.h"

namespace kestrel::backends::cpu {

const ops::Products& fast_products();

// The float product itself. oneDNN threads with OpenMP: inside a parallel
// region it stays on the calling thread; outside it uses OpenMP's default
// for the calling thread, which the executor sets to the run's thread count.
void fast_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// The exact integer product on oneDNN's u8 x s8 GEMM, which computes
// (U - ao)(S - bo) for U in u8 and S in s8: whether it may take A with
// entries in [amin, amax] (a weight minus its zero point) and B in [bmin,
// bmax] (an activation minus its), and the shifts that carry them there
// (U = A + ao in [0, 255], S = B + bo in [-128, 127]). Only on CPUs with
// AVX-512 VNNI at the level the process allows: there the sums are exact
// and 3.3x faster than the float SGEMM (a 64 x 10816 x 576 product on one
// thread: 2.2 against 7.3 ms); without VNNI oneDNN adds pairs of products in
// int16, which saturates (every result of that product came out wrong on
// AVX2).
bool u8s8_offsets(int32_t amin, int32_t amax, int32_t bmin, int32_t bmax, int32_t& ao, int32_t& bo);
// C[M, N] (ldc) = (U - ao)(S - bo): U is M x K (row stride K), S K x N (ldb).
void gemm_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t* U, int32_t ao, const int8_t* S, int64_t ldb, int32_t bo,
               int32_t* C, int64_t ldc);

}  // namespace kestrel::backends::cpu

// The CPU backend's matrix products (ops/products.h): oneDNN's SGEMM, the
// narrow AVX2/AVX-512 kernels for products with one side at most 8 wide
// (narrow_gemm.h), and exact int32 products on the float SGEMM
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

}  // namespace kestrel::backends::cpu

// Products with one narrow side (at most 8 columns of C, or 8 rows with B
// transposed): a 1-D convolution over a short signal, a recurrent step of
// one sequence. oneDNN packs the wide operand on every call, and for a
// layer's weights (read once) the packing costs more than the product; these
// kernels read the weights in place with the widest FMAs the CPU has.
#pragma once
#include <cstdint>

#include "core/cpu_isa.h"

namespace kestrel::backends::cpu {

// C[M,N] = A[M,K] op(B) (row-major; B [K,N], or [N,K] with trans_b) when
// N <= 8, or trans_b and M <= 8, and K >= 8, on the AVX2 or AVX-512 kernel
// (`isa`: cpu_isa() unless a test forces one) or on arm64 the NEON one;
// false otherwise, and on a baseline x86 CPU, where oneDNN's own dispatch
// does better than SSE2 here.
bool narrow_gemm(bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                 int64_t ldb, float* C, int64_t ldc, CpuIsa isa = cpu_isa());

namespace narrow_avx2 {
void narrow(int64_t n, int64_t rows, int64_t K, const float* x, int64_t ldx, const float* v, float* C, int64_t c_row,
            int64_t c_col);
}
namespace narrow_avx512 {
void narrow(int64_t n, int64_t rows, int64_t K, const float* x, int64_t ldx, const float* v, float* C, int64_t c_row,
            int64_t c_col);
}
namespace narrow_neon {  // arm64 only
void narrow(int64_t n, int64_t rows, int64_t K, const float* x, int64_t ldx, const float* v, float* C, int64_t c_row,
            int64_t c_col);
}

}  // namespace kestrel::backends::cpu

// Products with one narrow side (at most 8 columns of C, or 8 rows with B
// transposed): a 1-D convolution over a short signal, a recurrent step of
// one sequence. oneDNN packs the wide operand on every call, and for a
// layer's weights (read once) the packing costs more than the product; these
// kernels read the weights in place with the widest FMAs the CPU has.
#pragma once
#include <cstdint>

namespace kestrel::backends::cpu {

enum class NarrowIsa { Avx2, Avx512 };

// AVX-512F where the CPU has it and it is allowed, else AVX2.
NarrowIsa narrow_isa();
// Allows AVX-512F or keeps to AVX2, for the whole process (runtime::Config
// sets it from KESTREL_CPU_ISA when a session is made).
void allow_avx512(bool allowed);
bool cpu_has_avx512();

// C[M,N] = A[M,K] op(B) (row-major; B [K,N], or [N,K] with trans_b) when
// N <= 8, or trans_b and M <= 8, and K >= 8; false otherwise.
bool narrow_gemm(bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                 int64_t ldb, float* C, int64_t ldc, NarrowIsa isa = narrow_isa());

namespace narrow_avx2 {
void narrow(int64_t n, int64_t rows, int64_t K, const float* x, int64_t ldx, const float* v, float* C, int64_t c_row,
            int64_t c_col);
}
namespace narrow_avx512 {
void narrow(int64_t n, int64_t rows, int64_t K, const float* x, int64_t ldx, const float* v, float* C, int64_t c_row,
            int64_t c_col);
}

}  // namespace kestrel::backends::cpu

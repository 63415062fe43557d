// Narrow products: lays out the narrow operand contiguous in K, then runs the
// kernel for the CPU's instruction set.
#include "backends/cpu/narrow_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace kestrel::backends::cpu {

bool narrow_gemm(bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                 float* C, int64_t ldc, CpuIsa isa) {
  if (K < 8) return false;
  void (*narrow)(int64_t, int64_t, int64_t, const float*, int64_t, const float*, float*, int64_t, int64_t) = nullptr;
#if KESTREL_X86
  if (isa == CpuIsa::Baseline) return false;
  narrow = isa == CpuIsa::Avx512 ? narrow_avx512::narrow : narrow_avx2::narrow;
#elif defined(__aarch64__)
  (void)isa;  // (x86's levels: every AArch64 CPU has NEON)
  narrow = narrow_neon::narrow;
#else
  (void)isa;
  return false;
#endif
  // (One thread: splitting these products over threads measured slower on
  // the 16-core H200 host, 0.07 -> 0.16 ms for Silero VAD.)
  static thread_local std::vector<float> v;
  if (!tb && N <= 8) {  // B's N columns, gathered contiguous in K
    v.resize(size_t(N * K));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) v[size_t(n * K + k)] = B[k * ldb + n];
    narrow(N, M, K, A, lda, v.data(), C, ldc, 1);
    return true;
  }
  // The narrow side's rows, K apart (gathered into v when they are not).
  auto packed = [&](const float* p, int64_t rows, int64_t ld) {
    if (ld == K) return p;
    v.resize(size_t(rows * K));
    for (int64_t i = 0; i < rows; ++i) std::copy(p + i * ld, p + i * ld + K, v.begin() + i * K);
    return static_cast<const float*>(v.data());
  };
  if (tb && N <= 8) {  // B's N rows against A's rows (a convolution's windows from im2row)
    narrow(N, M, K, A, lda, packed(B, N, ldb), C, ldc, 1);
    return true;
  }
  if (tb && M <= 8) {  // A's M rows against B's N rows: C[i, j] = A[i] . B[j]
    narrow(M, N, K, B, ldb, packed(A, M, lda), C, 1, ldc);
    return true;
  }
  return false;
}

}  // namespace kestrel::backends::cpu

#include "backends/cpu/fast_products.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "backends/cpu/igemm_exact.h"
#include "backends/cpu/narrow_gemm.h"
#include "core/cpu_isa.h"
#include "core/error.h"
#include "ops/common.h"

namespace kestrel::backends::cpu {

void fast_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // nothing to multiply: C = beta * C
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0 ? 0.f : beta * C[i * ldc + j];
    return;
  }
  // (On one thread: large narrow products stay with oneDNN's threads.)
  const bool one_thread = M * N * K < (int64_t(1) << 21) || omp_in_parallel();
  if (!ta && alpha == 1.f && beta == 0.f && one_thread && narrow_gemm(tb, M, N, K, A, lda, B, ldb, C, ldc)) return;
  // A small product finishes before a team of threads would have started:
  // run it on the calling thread (matters for recurrent steps and tiny models
  // on many-core hosts).
  const bool small = M * N * K < (int64_t(1) << 18) && !omp_in_parallel();
  const int team = small ? omp_get_max_threads() : 1;
  if (small) omp_set_num_threads(1);
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (small) omp_set_num_threads(team);
  if (st != dnnl_success) fail("oneDNN sgemm failed (status ", int(st), ") for M=", M, " N=", N, " K=", K);
}

namespace {

// C = A B on the u8 x s8 GEMM where it may take them (u8s8_offsets).
bool igemm_u8s8(int threads, int64_t M, int64_t N, int64_t K, const int32_t* A, const int32_t* B, int32_t* C) {
  if (M * N * K < (int64_t(1) << 16)) return false;
  const auto [amin, amax] = std::minmax_element(A, A + M * K);
  const auto [bmin, bmax] = std::minmax_element(B, B + K * N);
  int32_t ao = 0, bo = 0;
  if (!u8s8_offsets(*amin, *amax, *bmin, *bmax, ao, bo)) return false;
  std::vector<uint8_t> u(size_t(M * K));
  std::vector<int8_t> s(size_t(K * N));
  for (size_t i = 0; i < u.size(); ++i) u[i] = uint8_t(A[i] + ao);
  ops::parallel_for(threads, K, 1, [&](int64_t k) {  // (B is the large operand: im2col of the activations)
    for (int64_t n = 0; n < N; ++n) s[size_t(k * N + n)] = int8_t(B[k * N + n] + bo);
  });
  gemm_u8s8(M, N, K, u.data(), ao, s.data(), N, bo, C, N);
  return true;
}

class FastProducts final : public ops::Products {
 public:
  // (The thread count reaches oneDNN through OpenMP's default: see fast_sgemm.)
  void sgemm(int, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
             const float* B, int64_t ldb, float beta, float* C, int64_t ldc) const override {
    fast_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  // Small products one per thread, large ones one after another with all
  // threads each.
  void sgemm_batched(int threads, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                     const int64_t* a_off, const float* B, int64_t ldb, const int64_t* b_off, float* C, int64_t ldc,
                     const int64_t* c_off, int64_t batch) const override {
    const bool large = batch == 1 || M * N * K >= (1 << 21);
    ops::parallel_for(large ? 1 : threads, batch, 1, [&](int64_t b) {
      fast_sgemm(ta, tb, M, N, K, 1.f, A + a_off[b], lda, B + b_off[b], ldb, 0.f, C + c_off[b], ldc);
    });
  }
  // On oneDNN's integer GEMM where it is exact and the operands fit
  // (igemm_u8s8), else exact on the float GEMM (see igemm_exact.h): split A
  // once, widen B to float, and give each thread a block of columns.
  void igemm(int threads, int64_t M, int64_t N, int64_t K, const int32_t* A, const int32_t* B,
             int32_t* C) const override {
    if (igemm_u8s8(threads, M, N, K, A, B, C)) return;
    SplitOperand a = split_operand(A, M, K);
    std::vector<float> b(static_cast<size_t>(K * N));
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(B[i]);
    const int64_t cols = std::max<int64_t>(64, (N + threads - 1) / std::max(threads, 1));
    ops::parallel_for(threads, (N + cols - 1) / cols, 1, [&](int64_t t) {
      int64_t j0 = t * cols, n = std::min(cols, N - j0);
      igemm_exact_serial(a, 0, M, n, b.data() + j0, N, C + j0, N);
    });
  }
};

}  // namespace

bool u8s8_offsets(int32_t amin, int32_t amax, int32_t bmin, int32_t bmax, int32_t& ao, int32_t& bo) {
  if (!cpu_avx512_vnni()) return false;
  ao = std::max(-amin, 0);
  bo = std::max(-128 - bmin, -128);
  return ao <= 255 && amax + ao <= 255 && bo <= 127 && bmax + bo <= 127;
}

void gemm_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t* U, int32_t ao, const int8_t* S, int64_t ldb, int32_t bo,
               int32_t* C, int64_t ldc) {
  const int32_t no_offset = 0;
  dnnl_status_t st = dnnl_gemm_u8s8s32('N', 'N', 'F', M, N, K, 1.f, U, K, uint8_t(ao), S, ldb, int8_t(bo), 0.f, C, ldc,
                                       &no_offset);
  if (st != dnnl_success) fail("oneDNN u8s8s32 GEMM failed (status ", int(st), ") for M=", M, " N=", N, " K=", K);
}

const ops::Products& fast_products() {
  static const FastProducts p;
  return p;
}

}  // namespace kestrel::backends::cpu

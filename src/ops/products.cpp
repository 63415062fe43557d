#include "ops/products.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "ops/common.h"

namespace kestrel::ops {
namespace {

// Rows [r0, r1) of C. For each row the k loop is outside the j loop, so the
// innermost loop runs along rows of B and C (contiguous without trans_b) and
// the compiler vectorizes it; each C[i][j] is still the sum over k in order.
void sgemm_rows(int64_t r0, int64_t r1, bool ta, bool tb, int64_t N, int64_t K, float alpha, const float* A,
                int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  std::vector<float> acc(size_t(N > 0 ? N : 0));
  for (int64_t i = r0; i < r1; ++i) {
    std::fill(acc.begin(), acc.end(), 0.f);
    for (int64_t k = 0; k < K; ++k) {
      const float a = ta ? A[k * lda + i] : A[i * lda + k];
      if (tb) {
        for (int64_t j = 0; j < N; ++j) acc[size_t(j)] += a * B[j * ldb + k];
      } else {
        const float* b = B + k * ldb;
        for (int64_t j = 0; j < N; ++j) acc[size_t(j)] += a * b[j];
      }
    }
    float* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = alpha * acc[size_t(j)] + (beta == 0.f ? 0.f : beta * c[j]);
  }
}

// Runs task(r0, r1) over [0, rows) on up to `threads` threads (parallel_for),
// in contiguous blocks. Each output belongs to one block, so the split
// changes no value.
template <typename F>
void split_rows(int threads, int64_t rows, int64_t work_per_row, const F& task) {
  // Below ~1M multiply-adds a thread costs more than it saves.
  const int64_t want =
      threads <= 1 || omp_in_parallel() || rows * work_per_row < (int64_t(1) << 20) ? 1 : std::min<int64_t>(threads, rows);
  if (want <= 1) return task(0, rows);
  const int64_t block = (rows + want - 1) / want;
  parallel_for(int(want), want, 1, [&](int64_t t) {
    if (t * block < rows) task(t * block, std::min(rows, (t + 1) * block));
  });
}

class ReferenceProducts final : public Products {
 public:
  void sgemm(int threads, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
             const float* B, int64_t ldb, float beta, float* C, int64_t ldc) const override {
    split_rows(threads, M, N * K, [&](int64_t r0, int64_t r1) {
      sgemm_rows(r0, r1, ta, tb, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    });
  }
  void sgemm_batched(int threads, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                     const int64_t* a_off, const float* B, int64_t ldb, const int64_t* b_off, float* C, int64_t ldc,
                     const int64_t* c_off, int64_t batch) const override {
    split_rows(threads, batch, M * N * K, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b)
        sgemm_rows(0, M, ta, tb, N, K, 1.f, A + a_off[b], lda, B + b_off[b], ldb, 0.f, C + c_off[b], ldc);
    });
  }
  void igemm(int threads, int64_t M, int64_t N, int64_t K, const int32_t* A, const int32_t* B,
             int32_t* C) const override {
    split_rows(threads, M, N * K, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i) {
        int32_t* c = C + i * N;
        std::fill(c, c + N, 0);
        for (int64_t k = 0; k < K; ++k) {
          const int32_t a = A[i * K + k];
          const int32_t* b = B + k * N;
          for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
        }
      }
    });
  }
};

}  // namespace

const Products& reference_products() {
  static const ReferenceProducts p;
  return p;
}

}  // namespace kestrel::ops

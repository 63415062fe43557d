// Det: determinant of each trailing square matrix, by LU decomposition with
// partial pivoting in double precision.
#include <cmath>
#include <vector>

#include "ops/common.h"

namespace kestrel::ops {
namespace {

double determinant(std::vector<double>& a, int64_t m) {
  double det = 1.0;
  for (int64_t k = 0; k < m; ++k) {
    int64_t piv = k;
    for (int64_t r = k + 1; r < m; ++r)
      if (std::fabs(a[size_t(r * m + k)]) > std::fabs(a[size_t(piv * m + k)])) piv = r;
    if (a[size_t(piv * m + k)] == 0.0) return 0.0;
    if (piv != k) {
      for (int64_t c = 0; c < m; ++c) std::swap(a[size_t(k * m + c)], a[size_t(piv * m + c)]);
      det = -det;
    }
    double d = a[size_t(k * m + k)];
    det *= d;
    for (int64_t r = k + 1; r < m; ++r) {
      double f = a[size_t(r * m + k)] / d;
      for (int64_t c = k + 1; c < m; ++c) a[size_t(r * m + c)] -= f * a[size_t(k * m + c)];
    }
  }
  return det;
}

template <typename T>
void det_typed(KernelContext& ctx, const Tensor& X) {
  const int64_t m = X.dim(-1);
  Shape out(X.shape().begin(), X.shape().end() - 2);
  Tensor& Y = ctx.output(0, X.dtype(), out);
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  parallel_for(ctx, Y.numel(), 16, [&](int64_t b) {
    std::vector<double> a(x + b * m * m, x + (b + 1) * m * m);
    y[b] = T(determinant(a, m));
  });
}

void run_det(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.rank() < 2 || X.dim(-1) != X.dim(-2)) ctx.fail("input must be [*, M, M], got ", shape_str(X.shape()));
  if (X.dtype() == DType::Float32) return det_typed<float>(ctx, X);
  if (X.dtype() == DType::Float64) return det_typed<double>(ctx, X);
  ctx.fail("supports float and double only, got ", dtype_name(X.dtype()));
}

}  // namespace

KESTREL_OP(Det, {.min_opset = 11, .run = run_det});

}  // namespace kestrel::ops

// Softmax, LogSoftmax and Hardmax. Before opset 13 the input is seen as a 2-D
// matrix [prod(dims before axis), prod(dims from axis)] and each row is
// normalized; from 13 on only the one axis is.
#include <cmath>
#include <limits>

#include "ops/reduce_util.h"
#include "ops/softmax.h"

namespace kestrel::ops {

SoftmaxLayout softmax_layout(const KernelContext& ctx, const Tensor& x) {
  int rank = x.rank();
  bool legacy = ctx.node.opset < 13;
  int axis = normalize_axis(ctx, ctx.node.attr_i("axis", legacy ? 1 : -1), std::max(rank, 1));
  SoftmaxLayout l;
  for (int i = 0; i < rank; ++i) {
    int64_t d = x.dim(i);
    if (i < axis) l.outer *= d;
    else if (i == axis || legacy) l.n *= d;
    else l.inner *= d;
  }
  return l;
}

namespace {

enum class Kind { Soft, LogSoft, Hard };

// One row at unit stride (the common last-axis case).
template <typename T>
void row(Kind k, const T* x, T* y, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
  int64_t arg = 0;
  for (int64_t i = 0; i < n; ++i)
    if (x[i] > m) m = x[i], arg = i;
  if (k == Kind::Hard) {
    for (int64_t i = 0; i < n; ++i) y[i] = T(i == arg);
    return;
  }
  // A row of all -inf has no finite maximum; shift by 0 instead (giving NaN
  // for Softmax like the definition, not a spurious inf - inf).
  if (!std::isfinite(m)) m = std::isnan(m) ? m : T(0);
  double sum = 0;
  if (k == Kind::Soft) {
    for (int64_t i = 0; i < n; ++i) sum += double(y[i] = std::exp(x[i] - m));
    T inv = T(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  } else {
    for (int64_t i = 0; i < n; ++i) sum += std::exp(double(x[i] - m));
    // (x - m) - log(sum), not x - (m + log(sum)): the latter loses log(sum) next to a huge m.
    T ls = T(std::log(sum));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - ls;
  }
}

// One [n, inner] block: the op runs down each of the `inner` columns, vectorized across them.
template <typename T>
void block(Kind k, const T* x, T* y, int64_t n, int64_t inner) {
  std::vector<T> m(size_t(inner), -std::numeric_limits<T>::infinity());
  std::vector<int64_t> arg(size_t(inner), 0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < inner; ++i)
      if (x[r * inner + i] > m[size_t(i)]) m[size_t(i)] = x[r * inner + i], arg[size_t(i)] = r;
  if (k == Kind::Hard) {
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < inner; ++i) y[r * inner + i] = T(arg[size_t(i)] == r);
    return;
  }
  for (T& v : m)
    if (!std::isfinite(v)) v = std::isnan(v) ? v : T(0);
  std::vector<double> sum(size_t(inner), 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < inner; ++i) {
      T e = std::exp(x[r * inner + i] - m[size_t(i)]);
      if (k == Kind::Soft) y[r * inner + i] = e;
      sum[size_t(i)] += double(e);
    }
  for (int64_t i = 0; i < inner; ++i)
    sum[size_t(i)] = k == Kind::Soft ? 1.0 / sum[size_t(i)] : std::log(sum[size_t(i)]);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < inner; ++i) {
      T& o = y[r * inner + i];
      o = k == Kind::Soft ? T(o * sum[size_t(i)]) : T((x[r * inner + i] - m[size_t(i)]) - sum[size_t(i)]);
    }
}

template <typename T>
void run_typed(KernelContext& ctx, Kind k, const Tensor& xt, Tensor& yt, const SoftmaxLayout& l) {
  const T* x = xt.data<T>();
  T* y = yt.data<T>();
  if (l.inner == 1) {
    parallel_for(ctx, l.outer, 1 + (1 << 14) / std::max<int64_t>(1, l.n),
                 [&](int64_t o) { row(k, x + o * l.n, y + o * l.n, l.n); });
  } else {
    int64_t per = l.n * l.inner;
    parallel_for(ctx, l.outer, 1 + (1 << 14) / std::max<int64_t>(1, per),
                 [&](int64_t o) { block(k, x + o * per, y + o * per, l.n, l.inner); });
  }
}

void run_kind(KernelContext& ctx, Kind k) {
  const Tensor& x = ctx.input(0);
  SoftmaxLayout l = softmax_layout(ctx, x);
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  if (x.numel() == 0) return;
  if (x.dtype() == DType::Float32) run_typed<float>(ctx, k, x, y, l);
  else if (x.dtype() == DType::Float64) run_typed<double>(ctx, k, x, y, l);
  else ctx.fail("element type ", dtype_name(x.dtype()), " is not supported (float types only)");
}

void run_softmax(KernelContext& ctx) { run_kind(ctx, Kind::Soft); }
void run_log_softmax(KernelContext& ctx) { run_kind(ctx, Kind::LogSoft); }
void run_hardmax(KernelContext& ctx) { run_kind(ctx, Kind::Hard); }

}  // namespace

KESTREL_OP(Softmax, {.run = run_softmax});
KESTREL_OP(LogSoftmax, {.run = run_log_softmax});
KESTREL_OP(Hardmax, {.run = run_hardmax});

}  // namespace kestrel::ops

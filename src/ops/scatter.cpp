// ScatterND and ScatterElements (and opset 9-10 Scatter): a copy of data with
// updates written (or reduced) at checked indices, applied in index order.
#include <string>

#include "ops/movement.h"

namespace kestrel::ops {
namespace {

enum class Reduce { None, Add, Mul, Max, Min };

Reduce read_reduction(const KernelContext& ctx) {
  std::string s = ctx.node.opset >= 16 ? ctx.node.attr_s("reduction", "none") : "none";
  if (s == "none") return Reduce::None;
  if (s == "add") return Reduce::Add;
  if (s == "mul") return Reduce::Mul;
  if (ctx.node.opset >= 18 && s == "max") return Reduce::Max;
  if (ctx.node.opset >= 18 && s == "min") return Reduce::Min;
  ctx.fail("reduction '", s, "' is not supported at opset ", ctx.node.opset);
}

template <typename T>
void apply(T& dst, T v, Reduce red) {
  switch (red) {
    case Reduce::None: dst = v; break;
    case Reduce::Add: dst = T(dst + v); break;
    case Reduce::Mul: dst = T(dst * v); break;
    case Reduce::Max: dst = std::max(dst, v); break;
    case Reduce::Min: dst = std::min(dst, v); break;
  }
}

void check_same_dtype(const KernelContext& ctx, const Tensor& data, const Tensor& upd) {
  if (upd.dtype() != data.dtype())
    ctx.fail("updates are ", dtype_name(upd.dtype()), " but data is ", dtype_name(data.dtype()));
}

void run_scatter_nd(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& it = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  check_same_dtype(ctx, x, upd);
  Reduce red = read_reduction(ctx);
  int r = x.rank(), q = it.rank();
  if (q < 1) ctx.fail("indices must have rank >= 1, got a scalar");
  int64_t m = it.shape()[size_t(q - 1)];
  if (m > r) ctx.fail("index tuples of length ", m, " exceed data rank ", r, " ", shape_str(x.shape()));
  Shape want(it.shape().begin(), it.shape().end() - 1);
  want.insert(want.end(), x.shape().begin() + m, x.shape().end());
  if (upd.shape() != want)
    ctx.fail("updates ", shape_str(upd.shape()), " must have shape ", shape_str(want), " for data ",
             shape_str(x.shape()), " and indices ", shape_str(it.shape()));
  std::vector<int64_t> idx = input_ints(ctx, 1, "indices");
  std::vector<int64_t> xs = row_strides(x.shape());
  int64_t slice = 1;
  for (int64_t k = m; k < r; ++k) slice *= x.shape()[size_t(k)];
  int64_t tuples = 1;
  for (int k = 0; k + 1 < q; ++k) tuples *= it.shape()[size_t(k)];
  std::vector<int64_t> offs(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t k = 0; k < m; ++k)
      off += checked_index(ctx, idx[size_t(t * m + k)], x.shape()[size_t(k)], "ScatterND") * xs[size_t(k)];
    offs[size_t(t)] = off;
  }
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  std::copy_n(x.raw(), x.nbytes(), y.raw());
  dispatch_numeric(x.dtype(), "ScatterND", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    T* dst = y.data<T>();
    const T* src = upd.data<T>();
    for (int64_t t = 0; t < tuples; ++t)
      for (int64_t e = 0; e < slice; ++e) apply(dst[offs[size_t(t)] + e], src[t * slice + e], red);
  });
}

void run_scatter_elements(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& it = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  check_same_dtype(ctx, x, upd);
  Reduce red = read_reduction(ctx);
  int r = x.rank();
  if (r == 0) ctx.fail("data must have rank >= 1, got a scalar");
  int axis = normalize_axis(ctx, ctx.node.attr_i("axis", 0), r);
  if (it.shape() != upd.shape() || it.rank() != r)
    ctx.fail("indices ", shape_str(it.shape()), " and updates ", shape_str(upd.shape()),
             " must have one shape of the rank of data ", shape_str(x.shape()));
  for (int k = 0; k < r; ++k)
    if (k != axis && it.shape()[size_t(k)] > x.shape()[size_t(k)])
      ctx.fail("indices ", shape_str(it.shape()), " exceed data ", shape_str(x.shape()), " on axis ", k);
  std::vector<int64_t> idx = input_ints(ctx, 1, "indices");
  int64_t n = x.shape()[size_t(axis)];
  for (int64_t& v : idx) v = checked_index(ctx, v, n, "ScatterElements");
  std::vector<int64_t> xs = row_strides(x.shape());
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  std::copy_n(x.raw(), x.nbytes(), y.raw());
  dispatch_numeric(x.dtype(), "ScatterElements", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    T* dst = y.data<T>();
    const T* src = upd.data<T>();
    std::vector<int64_t> pos(size_t(r), 0);
    for (size_t e = 0; e < idx.size(); ++e) {
      int64_t off = 0;
      for (int k = 0; k < r; ++k) off += (k == axis ? idx[e] : pos[size_t(k)]) * xs[size_t(k)];
      apply(dst[off], src[e], red);
      for (int k = r - 1; k >= 0 && ++pos[size_t(k)] == it.shape()[size_t(k)]; --k) pos[size_t(k)] = 0;
    }
  });
}

}  // namespace

KESTREL_OP(ScatterND, {.min_opset = 11, .run = run_scatter_nd});
KESTREL_OP(ScatterElements, {.min_opset = 11, .run = run_scatter_elements});
KESTREL_OP(Scatter, {.min_opset = 9, .max_opset = 10, .run = run_scatter_elements});

}  // namespace kestrel::ops

// ArgMax and ArgMin along one axis (first or, with select_last_index, last
// position of the extreme value).
#include "ops/movement.h"

namespace kestrel::ops {
namespace {

template <bool Max>
void run_arg(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int r = x.rank();
  if (r == 0) ctx.fail("input must have rank >= 1, got a scalar");
  int axis = normalize_axis(ctx, ctx.node.attr_i("axis", 0), r);
  bool keep = ctx.node.attr_i("keepdims", 1) != 0;
  bool last = ctx.node.opset >= 12 && ctx.node.attr_i("select_last_index", 0) != 0;
  int64_t n = x.shape()[size_t(axis)], outer = 1, inner = 1;
  if (n == 0) ctx.fail("cannot reduce the empty axis ", axis, " of ", shape_str(x.shape()));
  for (int d = 0; d < axis; ++d) outer *= x.shape()[size_t(d)];
  for (int d = axis + 1; d < r; ++d) inner *= x.shape()[size_t(d)];
  Shape out = x.shape();
  if (keep) out[size_t(axis)] = 1;
  else out.erase(out.begin() + axis);
  Tensor& y = ctx.output(0, DType::Int64, out);
  int64_t* dst = y.data<int64_t>();
  dispatch_numeric(x.dtype(), Max ? "ArgMax" : "ArgMin", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* src = x.data<T>();
    parallel_for(ctx, outer * inner, 4096 / (n + 1) + 1, [&](int64_t s) {
      int64_t o = s / inner, c = s % inner;
      const T* base = src + o * n * inner + c;
      T best = base[0];
      int64_t at = 0;
      for (int64_t i = 1; i < n; ++i) {
        T v = base[i * inner];
        bool better = Max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
        if (better) best = v, at = i;
      }
      dst[s] = at;
    });
  });
}

}  // namespace

KESTREL_OP(ArgMax, {.run = run_arg<true>});
KESTREL_OP(ArgMin, {.run = run_arg<false>});

}  // namespace kestrel::ops

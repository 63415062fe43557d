// CumSum along one axis, optionally exclusive and/or reversed.
#include "ops/movement.h"

namespace kestrel::ops {
namespace {

void run_cumsum(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int r = x.rank();
  std::vector<int64_t> av = input_ints(ctx, 1, "axis");
  if (av.size() != 1) ctx.fail("axis must hold one value, got ", av.size());
  int axis = normalize_axis(ctx, av[0], r);
  bool exclusive = ctx.node.attr_i("exclusive", 0) != 0, reverse = ctx.node.attr_i("reverse", 0) != 0;
  int64_t n = r ? x.shape()[size_t(axis)] : 1, outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[size_t(d)];
  for (int d = axis + 1; d < r; ++d) inner *= x.shape()[size_t(d)];
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  dispatch_numeric(x.dtype(), "CumSum", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if constexpr (std::is_same_v<T, bool>) {
      ctx.fail("bool input is not supported");
    } else {
      const T* src = x.data<T>();
      T* dst = y.data<T>();
      parallel_for(ctx, outer, 4096 / (n * inner + 1) + 1, [&](int64_t o) {
        // Running sums for the whole inner block at once keep the access contiguous.
        std::vector<T> acc(static_cast<size_t>(inner), T(0));
        for (int64_t j = 0; j < n; ++j) {
          int64_t i = reverse ? n - 1 - j : j;
          const T* s = src + (o * n + i) * inner;
          T* d = dst + (o * n + i) * inner;
          for (int64_t c = 0; c < inner; ++c) {
            if (exclusive) {
              d[c] = acc[size_t(c)];
              acc[size_t(c)] = T(acc[size_t(c)] + s[c]);
            } else {
              acc[size_t(c)] = T(acc[size_t(c)] + s[c]);
              d[c] = acc[size_t(c)];
            }
          }
        }
      });
    }
  });
}

}  // namespace

KESTREL_OP(CumSum, {.min_opset = 11, .run = run_cumsum});

}  // namespace kestrel::ops

// TopK: the k largest (or smallest) values along an axis and their indices.
// Equal values keep the lower index first, as ONNX requires.
#include <algorithm>
#include <numeric>

#include "ops/movement.h"

namespace kestrel::ops {
namespace {

void run_topk(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int r = x.rank();
  if (r == 0) ctx.fail("input must have rank >= 1, got a scalar");
  int axis = normalize_axis(ctx, ctx.node.attr_i("axis", -1), r);
  int64_t k;
  if (ctx.node.opset < 10) {
    k = ctx.node.attr_i("k", -1);
  } else {
    std::vector<int64_t> kv = input_ints(ctx, 1, "K");
    if (kv.size() != 1) ctx.fail("K must hold one value, got ", kv.size());
    k = kv[0];
  }
  bool largest = ctx.node.opset < 11 || ctx.node.attr_i("largest", 1) != 0;
  int64_t n = x.shape()[size_t(axis)];
  if (k < 0 || k > n) ctx.fail("k = ", k, " is out of range for axis ", axis, " of ", shape_str(x.shape()));
  Shape out = x.shape();
  out[size_t(axis)] = k;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[size_t(d)];
  for (int d = axis + 1; d < r; ++d) inner *= x.shape()[size_t(d)];
  Tensor& vals = ctx.output(0, x.dtype(), out);
  Tensor& idxs = ctx.output(1, DType::Int64, out);
  if (k == 0) return;
  dispatch_numeric(x.dtype(), "TopK", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* src = x.data<T>();
    T* vo = vals.data<T>();
    int64_t* io = idxs.data<int64_t>();
    parallel_for(ctx, outer * inner, 4096 / (n + 1) + 1, [&](int64_t s) {
      int64_t o = s / inner, c = s % inner;
      const T* base = src + o * n * inner + c;
      std::vector<int64_t> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      auto before = [&](int64_t a, int64_t b) {
        T va = base[a * inner], vb = base[b * inner];
        if (va != vb) return largest ? va > vb : va < vb;
        return a < b;
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        int64_t at = (o * k + j) * inner + c;
        io[at] = order[size_t(j)];
        vo[at] = base[order[size_t(j)] * inner];
      }
    });
  });
}

}  // namespace

KESTREL_OP(TopK, {.run = run_topk});

}  // namespace kestrel::ops

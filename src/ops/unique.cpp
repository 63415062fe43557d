// Unique: the distinct elements (or, with an axis, the distinct slices along
// it) of a tensor, sorted ascending or in order of first occurrence, with
// first-occurrence indices, inverse indices and counts.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "ops/movement.h"

namespace kestrel::ops {
namespace {

// A total order for sorting: NaNs equal each other and follow every number.
template <typename T>
bool same(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a == b || (std::isnan(a) && std::isnan(b));
  return a == b;
}
template <typename T>
bool before(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return !std::isnan(a) && (std::isnan(b) || a < b);
  return a < b;
}

template <typename T>
void unique_typed(KernelContext& ctx, const Tensor& x, const Shape& shape, int axis, bool sorted) {
  const int64_t A = shape[size_t(axis)];
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  const T* src = x.data<T>();
  // Slice a is the elements (o, a, i) in (o, i) order: comparing them in that
  // order is numpy's comparison of rows after moving the axis to the front.
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o) {
      const T* pa = src + (o * A + a) * inner;
      const T* pb = src + (o * A + b) * inner;
      for (int64_t i = 0; i < inner; ++i)
        if (!same(pa[i], pb[i])) return before(pa[i], pb[i]);
    }
    return false;
  };
  auto equal = [&](int64_t a, int64_t b) { return !less(a, b) && !less(b, a); };
  std::vector<int64_t> order(static_cast<size_t>(A));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);  // equal slices keep first occurrence first
  // Groups of equal slices, each represented by its first occurrence.
  std::vector<int64_t> first, count, group_of(static_cast<size_t>(A));
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || !equal(order[k - 1], order[k])) {
      first.push_back(order[k]);
      count.push_back(0);
    }
    group_of[size_t(order[k])] = int64_t(first.size()) - 1;
    ++count.back();
  }
  // Output position of each group: sorted order, or order of first occurrence.
  const int64_t U = int64_t(first.size());
  std::vector<int64_t> pos(static_cast<size_t>(U));
  std::iota(pos.begin(), pos.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(pos);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[size_t(a)] < first[size_t(b)]; });
    for (int64_t k = 0; k < U; ++k) pos[size_t(by_first[size_t(k)])] = k;
  }
  Shape yshape = shape;
  yshape[size_t(axis)] = U;
  Tensor& y = ctx.output(0, x.dtype(), yshape);
  T* dst = y.data<T>();
  for (int64_t g = 0; g < U; ++g)
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(src + (o * A + first[size_t(g)]) * inner, inner, dst + (o * U + pos[size_t(g)]) * inner);
  if (ctx.wants_output(1)) {
    int64_t* p = ctx.output(1, DType::Int64, {U}).data<int64_t>();
    for (int64_t g = 0; g < U; ++g) p[pos[size_t(g)]] = first[size_t(g)];
  }
  if (ctx.wants_output(2)) {
    int64_t* p = ctx.output(2, DType::Int64, {A}).data<int64_t>();
    for (int64_t a = 0; a < A; ++a) p[a] = pos[size_t(group_of[size_t(a)])];
  }
  if (ctx.wants_output(3)) {
    int64_t* p = ctx.output(3, DType::Int64, {U}).data<int64_t>();
    for (int64_t g = 0; g < U; ++g) p[pos[size_t(g)]] = count[size_t(g)];
  }
}

void run_unique(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t sorted = ctx.node.attr_i("sorted", 1);
  if (sorted != 0 && sorted != 1) ctx.fail("sorted must be 0 or 1, got ", sorted);
  Shape shape{x.numel()};
  int axis = 0;
  if (ctx.node.has("axis")) {
    if (x.rank() == 0) ctx.fail("a scalar input has no axis to take unique slices along");
    axis = normalize_axis(ctx, ctx.node.attr_i("axis", 0), x.rank());
    shape = x.shape();
  }
  dispatch_numeric(x.dtype(), ctx.node.where().c_str(), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    unique_typed<T>(ctx, x, shape, axis, sorted == 1);
  });
}

}  // namespace

KESTREL_OP(Unique, {.min_opset = 11, .run = run_unique});

}  // namespace kestrel::ops

// Small helpers every op file uses: axis handling, broadcasting, parallel loops.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/registry.h"

namespace kestrel::ops {

// a / b rounded up, for a >= 0 and b > 0 (blocks and tiles a size takes).
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Maps a possibly negative axis into [0, rank); fails naming the node otherwise.
inline int normalize_axis(const KernelContext& ctx, int64_t axis, int rank) {
  if (axis < -rank || axis >= std::max(rank, 1)) ctx.fail("axis ", axis, " is out of range for rank ", rank);
  return int(axis < 0 ? axis + rank : axis);
}

// Numpy-style broadcast of two shapes; fails naming the node if incompatible.
inline Shape broadcast_shapes(const KernelContext& ctx, const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      ctx.fail("shapes ", shape_str(a), " and ", shape_str(b), " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Element strides of `in` when broadcast to `out` (0 where the dim is broadcast).
inline std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  int64_t s = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    size_t i = in.size() - 1 - k, o = out.size() - 1 - k;
    st[o] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  return st;
}

// Splits [0, n) over `threads` OpenMP threads when there are more than
// `grain` tasks (inside a parallel region the team is the calling thread).
template <typename F>
void parallel_for(int threads, int64_t n, int64_t grain, F&& f) {
  if (threads <= 1 || n <= grain) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) f(i);
}

// The same over the run's threads.
template <typename F>
void parallel_for(const KernelContext& ctx, int64_t n, int64_t grain, F&& f) {
  parallel_for(ctx.threads(), n, grain, std::forward<F>(f));
}

}  // namespace kestrel::ops

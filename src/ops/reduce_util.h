// Shared pieces of the reduction-shaped ops (Reduce*, normalizations,
// Softmax): reading the axes to reduce and splitting a tensor's elements into
// "kept" and "reduced" index sets so a kernel can walk each group.
#pragma once
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "ops/common.h"

namespace kestrel::ops {

// Float types accumulate in double, integers in 64 bits: sums of many
// float32 values then lose no more than one rounding.
template <typename T>
using acc_t = std::conditional_t<std::is_floating_point_v<T>, double,
                                 std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

// Normalizes, validates (range, duplicates) and returns a per-dim mask.
inline std::vector<bool> axes_mask(const KernelContext& ctx, const std::vector<int64_t>& axes, int rank) {
  std::vector<bool> mask(size_t(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) ctx.fail("axis ", a, " is out of range for rank ", rank);
    int k = int(a < 0 ? a + rank : a);
    if (mask[size_t(k)]) ctx.fail("axis ", a, " is listed twice");
    mask[size_t(k)] = true;
  }
  return mask;
}

// The elements of `shape` grouped by the kept dims: group g (an index into the
// kept dims in row-major order) consists of the elements at base[g] + off[j].
// Adjacent dims with the same status are merged first so the common cases
// (reduce the last dims, reduce the first dims) become a single stride.
struct ReducePlan {
  Shape out_keep;                 // output shape with keepdims=1
  Shape out_drop;                 // output shape with keepdims=0
  int64_t groups = 1;             // number of output elements
  int64_t count = 1;              // elements per group
  std::vector<int64_t> off;       // offsets of a group's elements, relative to base
  // When the reduced elements are contiguous (reduce the innermost dims),
  // off[j] == j and base(g) == g * count.
  bool contiguous = false;
  // When the reduced dims form one block followed by kept dims of size
  // `inner`: groups are [outer, inner] and elements are at stride `inner`.
  int64_t outer = 1, inner = 1;
  bool blocked = false;
  std::vector<int64_t> kept_dims, kept_strides;  // merged kept dims and their input strides

  int64_t base(int64_t g) const {
    int64_t b = 0;
    for (size_t k = kept_dims.size(); k-- > 0;) {
      b += (g % kept_dims[k]) * kept_strides[k];
      g /= kept_dims[k];
    }
    return b;
  }
};

inline ReducePlan make_reduce_plan(const Shape& shape, const std::vector<bool>& mask) {
  ReducePlan p;
  int rank = int(shape.size());
  for (int i = 0; i < rank; ++i) {
    p.out_keep.push_back(mask[size_t(i)] ? 1 : shape[size_t(i)]);
    if (!mask[size_t(i)]) p.out_drop.push_back(shape[size_t(i)]);
  }
  // Merge runs of dims with equal status (size-1 dims are dropped: they change nothing).
  struct Run { bool red; int64_t size, stride; };
  std::vector<Run> runs;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    int64_t d = shape[size_t(i)];
    if (d != 1) {
      bool red = mask[size_t(i)];
      if (!runs.empty() && runs.back().red == red && runs.back().stride * runs.back().size == stride)
        runs.back().size *= d;
      else
        runs.push_back({red, d, stride});
    }
    stride *= d;
  }
  std::reverse(runs.begin(), runs.end());
  std::vector<int64_t> rdims, rstrides;
  for (const Run& r : runs) {
    if (r.red) {
      rdims.push_back(r.size);
      rstrides.push_back(r.stride);
      p.count *= r.size;
    } else {
      p.kept_dims.push_back(r.size);
      p.kept_strides.push_back(r.stride);
      p.groups *= r.size;
    }
  }
  if (shape_numel(shape) == 0) {
    // Nothing to read: every output element is the reduction of an empty set.
    p.groups = shape_numel(p.out_keep);
    p.count = 0;
    p.contiguous = true;
    p.kept_dims = {p.groups};
    p.kept_strides = {0};
    return p;
  }
  p.contiguous = rdims.empty() || (rdims.size() == 1 && runs.back().red);
  if (!p.contiguous && rdims.size() == 1) {
    // [kept..., reduced, kept]: the trailing kept run is `inner`.
    p.blocked = true;
    p.inner = runs.back().size;
    p.outer = p.groups / p.inner;
  }
  p.off.assign(size_t(p.count), 0);
  // Offsets of every reduced element, odometer-style.
  std::vector<int64_t> idx(rdims.size(), 0);
  int64_t o = 0;
  for (int64_t j = 0; j < p.count; ++j) {
    p.off[size_t(j)] = o;
    for (size_t k = rdims.size(); k-- > 0;) {
      o += rstrides[k];
      if (++idx[k] < rdims[k]) break;
      o -= rstrides[k] * rdims[k];
      idx[k] = 0;
    }
  }
  return p;
}

// Reads the axes of a Reduce* node: the attribute before `input_from` (13 for
// ReduceSum, 18 for the rest), input 1 from then on.
inline std::vector<int64_t> reduce_axes(const KernelContext& ctx, int input_from, bool* noop) {
  *noop = false;
  if (ctx.node.opset < input_from) return ctx.node.attr_ints("axes");
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) axes = ctx.input(1).to_i64();
  if (axes.empty() && ctx.node.attr_i("noop_with_empty_axes", 0)) *noop = true;
  return axes;
}

}  // namespace kestrel::ops

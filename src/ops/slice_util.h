// Slice's parameters and the strided view they select, shared by the CPU
// kernel and the Vulkan one (each reads its own inputs, the rules are here).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/common.h"

namespace kestrel::ops {

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
};

// Attributes before opset 10, else inputs 1-4: has(i) says whether input i is
// given, ints(i, what) reads it as integers (`what` names it in errors).
template <typename Has, typename Ints>
SliceArgs read_slice_args(const KernelContext& ctx, Has&& has, Ints&& ints) {
  SliceArgs a;
  if (ctx.node.opset < 10) {
    a.starts = ctx.node.attr_ints("starts");
    a.ends = ctx.node.attr_ints("ends");
    a.axes = ctx.node.attr_ints("axes");
  } else {
    a.starts = ints(1, "starts");
    a.ends = ints(2, "ends");
    if (has(3)) a.axes = ints(3, "axes");
    if (has(4)) a.steps = ints(4, "steps");
  }
  return a;
}

// The elements Slice takes from a row-major tensor of shape `in`: output
// element c reads input element base + sum c_k * strides[k].
struct SliceView {
  Shape out;
  std::vector<int64_t> strides;
  int64_t base = 0;
  int64_t widest_step = 1;  // the step of largest magnitude on an axis yielding 2+ elements
};

inline SliceView slice_view(const KernelContext& ctx, const Shape& in, SliceArgs a) {
  int r = int(in.size());
  if (a.axes.empty())
    for (size_t k = 0; k < a.starts.size(); ++k) a.axes.push_back(int64_t(k));
  if (a.steps.empty()) a.steps.assign(a.starts.size(), 1);
  if (a.ends.size() != a.starts.size() || a.axes.size() != a.starts.size() || a.steps.size() != a.starts.size())
    ctx.fail("starts ", shape_str(a.starts), ", ends ", shape_str(a.ends), ", axes ", shape_str(a.axes),
             " and steps ", shape_str(a.steps), " must have the same length");
  std::vector<int64_t> in_st(size_t(r), 1);
  for (int k = r - 2; k >= 0; --k) in_st[size_t(k)] = in_st[size_t(k + 1)] * in[size_t(k + 1)];
  SliceView v{in, in_st};
  std::vector<bool> seen(size_t(r), false);
  for (size_t i = 0; i < a.axes.size(); ++i) {
    int ax = normalize_axis(ctx, a.axes[i], r);
    if (ax >= r) ctx.fail("axis ", a.axes[i], " is out of range for rank ", r);  // rank 0: nothing to slice
    if (seen[size_t(ax)]) ctx.fail("axes ", shape_str(a.axes), " repeat axis ", ax);
    seen[size_t(ax)] = true;
    int64_t d = in[size_t(ax)], step = std::max(a.steps[i], -INT64_MAX);  // keeps -step representable
    if (step == 0) ctx.fail("steps ", shape_str(a.steps), " contain 0");
    // Clamp as ONNX specifies: [0, d] for positive steps, [-1, d-1] for ends of negative steps.
    int64_t s = a.starts[i] < 0 ? a.starts[i] + d : a.starts[i];
    int64_t e = a.ends[i] < 0 ? a.ends[i] + d : a.ends[i];
    int64_t len;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      len = e > s ? (e - s - 1) / step + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      len = s > e ? (s - e - 1) / (-step) + 1 : 0;
    }
    v.out[size_t(ax)] = len;
    if (len > 1) {  // a single element needs no stride
      v.strides[size_t(ax)] = in_st[size_t(ax)] * step;
      if ((step < 0 ? -step : step) > (v.widest_step < 0 ? -v.widest_step : v.widest_step)) v.widest_step = step;
    }
    if (len > 0) v.base += s * in_st[size_t(ax)];
  }
  return v;
}

}  // namespace kestrel::ops

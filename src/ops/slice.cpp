// Slice: a strided view (steps may be negative) copied out densely.
#include "ops/movement.h"

namespace kestrel::ops {
namespace {

void run_slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int r = x.rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.node.opset < 10) {
    starts = ctx.node.attr_ints("starts");
    ends = ctx.node.attr_ints("ends");
    axes = ctx.node.attr_ints("axes");
  } else {
    starts = input_ints(ctx, 1, "starts");
    ends = input_ints(ctx, 2, "ends");
    if (ctx.has_input(3)) axes = input_ints(ctx, 3, "axes");
    if (ctx.has_input(4)) steps = input_ints(ctx, 4, "steps");
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts ", shape_str(starts), ", ends ", shape_str(ends), ", axes ", shape_str(axes), " and steps ",
             shape_str(steps), " must have the same length");

  const Shape& in = x.shape();
  std::vector<int64_t> in_st = row_strides(in);
  Shape out = in;
  std::vector<int64_t> st = in_st;
  std::vector<bool> seen(size_t(r), false);
  int64_t base = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    int a = normalize_axis(ctx, axes[i], r);
    if (seen[size_t(a)]) ctx.fail("axes ", shape_str(axes), " repeat axis ", a);
    seen[size_t(a)] = true;
    int64_t d = in[size_t(a)], step = std::max(steps[i], -INT64_MAX);  // keeps -step representable
    if (step == 0) ctx.fail("steps ", shape_str(steps), " contain 0");
    // Clamp as ONNX specifies: [0, d] for positive steps, [-1, d-1] for ends of negative steps.
    int64_t s = starts[i] < 0 ? starts[i] + d : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + d : ends[i];
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
    out[size_t(a)] = len;
    if (len > 1) st[size_t(a)] = in_st[size_t(a)] * step;  // a single element needs no stride
    if (len > 0) base += s * in_st[size_t(a)];
  }
  Tensor& y = ctx.output(0, x.dtype(), out);
  if (y.numel() == 0) return;
  strided_copy(ctx, x.dtype(), x.raw() + size_t(base) * dtype_size(x.dtype()), y.raw(), out, st);
}

}  // namespace

KESTREL_OP(Slice, {.run = run_slice, .half_native = true});

}  // namespace kestrel::ops

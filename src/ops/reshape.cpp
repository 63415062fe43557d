// Reshape, Flatten, Squeeze and Unsqueeze: new shapes over the same bytes
// (outputs alias their input, nothing is copied).
#include <algorithm>

#include "ops/movement.h"

namespace kestrel::ops {
namespace {

void run_reshape(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> spec = input_ints(ctx, 1, "shape");
  bool allowzero = ctx.node.opset >= 14 && ctx.node.attr_i("allowzero", 0) != 0;
  Shape out(spec.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    if (v == -1) {
      if (infer >= 0) ctx.fail("shape ", shape_str(spec), " has more than one -1");
      infer = int(i);
      continue;
    }
    if (v == 0 && !allowzero) {
      if (i >= x.shape().size())
        ctx.fail("shape ", shape_str(spec), " copies dim ", i, " (0) but the input ", shape_str(x.shape()),
                 " has rank ", x.rank());
      v = x.shape()[i];
    }
    if (v < 0) ctx.fail("shape ", shape_str(spec), " has the invalid dimension ", v);
    out[i] = v;
    known *= v;
  }
  if (infer >= 0) {
    if (allowzero && std::count(spec.begin(), spec.end(), 0))
      ctx.fail("shape ", shape_str(spec), " has both -1 and 0 with allowzero=1");
    if (known == 0 || x.numel() % known != 0)
      ctx.fail("cannot reshape input ", shape_str(x.shape()), " (", x.numel(), " elements) to ", shape_str(spec));
    out[size_t(infer)] = x.numel() / known;
  }
  if (shape_numel(out) != x.numel())
    ctx.fail("cannot reshape input ", shape_str(x.shape()), " (", x.numel(), " elements) to ", shape_str(spec),
             " (", shape_numel(out), " elements)");
  ctx.set_output(0, x.reshaped(out));
}

void run_flatten(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int r = x.rank();
  int64_t axis = ctx.node.attr_i("axis", 1);
  if (axis < -r || axis > r) ctx.fail("axis ", axis, " is out of range [", -r, ", ", r, "] for input ", shape_str(x.shape()));
  if (axis < 0) axis += r;
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape()[size_t(i)];
  int64_t inner = 1;
  for (int64_t i = axis; i < r; ++i) inner *= x.shape()[size_t(i)];
  ctx.set_output(0, x.reshaped({outer, inner}));
}

void run_squeeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int r = x.rank();
  std::vector<int64_t> axes;
  std::vector<bool> drop(size_t(r), false);
  if (ints_from_input_or_attr(ctx, 1, 13, "axes", axes)) {
    for (int64_t a : axes) {
      int k = normalize_axis(ctx, a, r);
      if (x.shape()[size_t(k)] != 1)
        ctx.fail("cannot squeeze axis ", a, ": its size is ", x.shape()[size_t(k)], " in ", shape_str(x.shape()));
      drop[size_t(k)] = true;
    }
  } else {
    for (int k = 0; k < r; ++k) drop[size_t(k)] = x.shape()[size_t(k)] == 1;
  }
  Shape out;
  for (int k = 0; k < r; ++k)
    if (!drop[size_t(k)]) out.push_back(x.shape()[size_t(k)]);
  ctx.set_output(0, x.reshaped(out));
}

void run_unsqueeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes;
  if (!ints_from_input_or_attr(ctx, 1, 13, "axes", axes)) ctx.fail("axes are required");
  int r = x.rank() + int(axes.size());
  std::vector<bool> added(size_t(r), false);
  for (int64_t a : axes) {
    int k = normalize_axis(ctx, a, r);
    if (added[size_t(k)]) ctx.fail("axes ", shape_str(axes), " name axis ", k, " twice");
    added[size_t(k)] = true;
  }
  Shape out;
  size_t src = 0;
  for (int k = 0; k < r; ++k) out.push_back(added[size_t(k)] ? 1 : x.shape()[src++]);
  ctx.set_output(0, x.reshaped(out));
}

}  // namespace

KESTREL_OP(Reshape, {.min_opset = 5, .run = run_reshape, .half_native = true});
KESTREL_OP(Flatten, {.run = run_flatten, .half_native = true});
KESTREL_OP(Squeeze, {.run = run_squeeze, .half_native = true});
KESTREL_OP(Unsqueeze, {.run = run_unsqueeze, .half_native = true});

}  // namespace kestrel::ops

// The output shapes of Reshape, Flatten, Squeeze and Unsqueeze (views over
// the same elements), shared by the CPU kernels and the Vulkan ones.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/common.h"

namespace kestrel::ops {

// The shape `spec` asks for from input shape `in`: 0 copies the input's dim
// (unless allowzero), one -1 takes what is left. Fails when the element
// counts differ.
inline Shape reshape_target(const KernelContext& ctx, const Shape& in, const std::vector<int64_t>& spec,
                            bool allowzero) {
  int64_t numel = shape_numel(in);
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
      if (i >= in.size())
        ctx.fail("shape ", shape_str(spec), " copies dim ", i, " (0) but the input ", shape_str(in), " has rank ",
                 in.size());
      v = in[i];
    }
    if (v < 0) ctx.fail("shape ", shape_str(spec), " has the invalid dimension ", v);
    out[i] = v;
    if (!mul_fits(known, v, known))
      ctx.fail("shape ", shape_str(spec), ": the element count overflows int64");
  }
  if (infer >= 0) {
    if (allowzero && std::count(spec.begin(), spec.end(), 0))
      ctx.fail("shape ", shape_str(spec), " has both -1 and 0 with allowzero=1");
    if (known == 0 || numel % known != 0)
      ctx.fail("cannot reshape input ", shape_str(in), " (", numel, " elements) to ", shape_str(spec));
    out[size_t(infer)] = numel / known;
  }
  if (shape_numel(out) != numel)
    ctx.fail("cannot reshape input ", shape_str(in), " (", numel, " elements) to ", shape_str(spec), " (",
             shape_numel(out), " elements)");
  return out;
}

// Flatten to [prod(in[:axis]), prod(in[axis:])]; axis may be rank.
inline Shape flatten_shape(const KernelContext& ctx, const Shape& in, int64_t axis) {
  int r = int(in.size());
  if (axis < -r || axis > r) ctx.fail("axis ", axis, " is out of range [", -r, ", ", r, "] for input ", shape_str(in));
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < r; ++k) (k < axis ? outer : inner) *= in[size_t(k)];
  return {outer, inner};
}

// Drops the listed axes (each of size 1), or every size-1 axis when `axes` is null.
inline Shape squeeze_shape(const KernelContext& ctx, const Shape& in, const std::vector<int64_t>* axes) {
  int r = int(in.size());
  std::vector<bool> drop(size_t(r), false);
  if (axes) {
    for (int64_t a : *axes) {
      int k = normalize_axis(ctx, a, r);
      if (k >= r) ctx.fail("axis ", a, " is out of range for rank ", r);  // a scalar has no axis to squeeze
      if (in[size_t(k)] != 1)
        ctx.fail("cannot squeeze axis ", a, ": its size is ", in[size_t(k)], " in ", shape_str(in));
      drop[size_t(k)] = true;
    }
  } else {
    for (int k = 0; k < r; ++k) drop[size_t(k)] = in[size_t(k)] == 1;
  }
  Shape out;
  for (int k = 0; k < r; ++k)
    if (!drop[size_t(k)]) out.push_back(in[size_t(k)]);
  return out;
}

// Inserts a size-1 axis at each listed position of the output.
inline Shape unsqueeze_shape(const KernelContext& ctx, const Shape& in, const std::vector<int64_t>& axes) {
  int r = int(in.size() + axes.size());
  std::vector<bool> added(size_t(r), false);
  for (int64_t a : axes) {
    int k = normalize_axis(ctx, a, r);
    if (added[size_t(k)]) ctx.fail("axes ", shape_str(axes), " name axis ", k, " twice");
    added[size_t(k)] = true;
  }
  Shape out;
  size_t src = 0;
  for (int k = 0; k < r; ++k) out.push_back(added[size_t(k)] ? 1 : in[src++]);
  return out;
}

}  // namespace kestrel::ops

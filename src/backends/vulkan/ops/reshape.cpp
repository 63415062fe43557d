// Reshape, Flatten, Squeeze, Unsqueeze and inference Dropout: new shapes over
// the same device memory (no dispatch). Semantics follow src/ops/reshape.cpp
// and src/ops/identity.cpp.
#include <algorithm>

#include "backends/vulkan/ops/movement.h"

namespace kestrel::vulkan {
namespace {

void alias(OpContext& ctx, const GpuTensor& x, Shape shape) {
  if (shape_numel(shape) != x.numel())
    ctx.fail("cannot view ", shape_str(x.shape), " as ", shape_str(shape));
  GpuTensor y = x;
  y.shape = std::move(shape);
  ctx.set_output(0, y);
}

void reshape(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  std::vector<int64_t> spec = host_ints(ctx, 1);
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
      if (i >= x.shape.size()) ctx.fail("shape ", shape_str(spec), " copies dim ", i, " past the input's rank");
      v = x.shape[i];
    }
    if (v < 0) ctx.fail("shape ", shape_str(spec), " has the invalid dimension ", v);
    out[i] = v;
    known *= v;
  }
  if (infer >= 0) {
    if (allowzero && std::count(spec.begin(), spec.end(), 0))
      ctx.fail("shape ", shape_str(spec), " has both -1 and 0 with allowzero=1");
    if (known == 0 || x.numel() % known != 0)
      ctx.fail("cannot reshape input ", shape_str(x.shape), " to ", shape_str(spec));
    out[size_t(infer)] = x.numel() / known;
  }
  alias(ctx, x, out);
}

void flatten(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  int r = int(x.shape.size());
  int64_t axis = ctx.node.attr_i("axis", 1);
  if (axis < -r || axis > r) ctx.fail("axis ", axis, " is out of range for input ", shape_str(x.shape));
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < r; ++k) (k < axis ? outer : inner) *= x.shape[size_t(k)];
  alias(ctx, x, {outer, inner});
}

void squeeze(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  int r = int(x.shape.size());
  std::vector<int64_t> axes;
  std::vector<bool> drop(size_t(r), false);
  if (ints_from_input_or_attr(ctx, 1, 13, "axes", axes)) {
    for (int64_t a : axes) {
      int k = norm_axis(ctx, a, r);
      if (x.shape[size_t(k)] != 1) ctx.fail("cannot squeeze axis ", a, " of ", shape_str(x.shape));
      drop[size_t(k)] = true;
    }
  } else {
    for (int k = 0; k < r; ++k) drop[size_t(k)] = x.shape[size_t(k)] == 1;
  }
  Shape out;
  for (int k = 0; k < r; ++k)
    if (!drop[size_t(k)]) out.push_back(x.shape[size_t(k)]);
  alias(ctx, x, out);
}

void unsqueeze(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  std::vector<int64_t> axes;
  if (!ints_from_input_or_attr(ctx, 1, 13, "axes", axes)) ctx.fail("axes are required");
  int r = int(x.shape.size() + axes.size());
  std::vector<bool> added(size_t(r), false);
  for (int64_t a : axes) {
    int k = norm_axis(ctx, a, r);
    if (added[size_t(k)]) ctx.fail("axes ", shape_str(axes), " name axis ", k, " twice");
    added[size_t(k)] = true;
  }
  Shape out;
  size_t src = 0;
  for (int k = 0; k < r; ++k) out.push_back(added[size_t(k)] ? 1 : x.shape[src++]);
  alias(ctx, x, out);
}

// Inference: the output is the input. The mask (all true) is left to the CPU.
void dropout(OpContext& ctx) {
  if (ctx.num_outputs() > 1 && ctx.node.outputs[1] >= 0) ctx.unsupported("the mask output is made on the CPU");
  if (ctx.has_input(2) && ctx.host_input(2).to_f32().at(0) != 0)
    ctx.fail("training_mode=true is not supported (Kestrel runs inference only)");
  ctx.set_output(0, ctx.input(0));
}

}  // namespace

KESTREL_VK_OP(Reshape, {.min_opset = 5, .record = reshape, .host_inputs = {1}});
KESTREL_VK_OP(Flatten, {.record = flatten});
KESTREL_VK_OP(Squeeze, {.record = squeeze, .host_inputs = {1}});
KESTREL_VK_OP(Unsqueeze, {.record = unsqueeze, .host_inputs = {1}});
KESTREL_VK_OP(Dropout, {.record = dropout, .host_inputs = {1, 2}});

}  // namespace kestrel::vulkan

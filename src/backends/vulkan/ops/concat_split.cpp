// Concat and Split as strided copies (shaders/copy_nd.comp); semantics of
// src/ops/concat_split.cpp.
#include "backends/vulkan/ops/geom_context.h"
#include "backends/vulkan/ops/movement.h"
#include "ops/split_util.h"

namespace kestrel::vulkan {
namespace {

void concat(OpContext& ctx) {
  const GpuTensor& first = ctx.input(0);
  int r = int(first.shape.size());
  if (!ctx.node.has("axis")) ctx.fail("the axis attribute is required");
  int axis = norm_axis(ctx, ctx.node.attr_i("axis", 0), r);
  Shape out = first.shape;
  out[size_t(axis)] = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const GpuTensor& t = ctx.input(i);
    if (t.dtype != first.dtype)
      ctx.fail("input ", i, " is ", dtype_name(t.dtype), " but input 0 is ", dtype_name(first.dtype));
    bool ok = int(t.shape.size()) == r;
    for (int k = 0; ok && k < r; ++k) ok = k == axis || t.shape[size_t(k)] == first.shape[size_t(k)];
    if (!ok) ctx.fail("input ", i, " ", shape_str(t.shape), " does not match input 0 ", shape_str(first.shape));
    out[size_t(axis)] += t.shape[size_t(axis)];
  }
  require_i32_indexing(ctx, shape_numel(out));
  GpuTensor& y = ctx.output(0, first.dtype, out);
  std::vector<int64_t> out_st = row_strides(out);
  int64_t at = 0;
  // One copy per input into its slice of the output.
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const GpuTensor& t = ctx.input(i);
    CopyView v;
    v.dims = t.shape;
    v.src_strides = row_strides(t.shape);
    v.dst_strides = out_st;
    v.dst_base = at * out_st[size_t(axis)];
    record_copy(ctx, t, y, v);
    at += t.shape[size_t(axis)];
  }
}

void split(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  int axis = norm_axis(ctx, ctx.node.attr_i("axis", 0), int(x.shape.size()));
  std::vector<int64_t> given;
  bool has_split = ints_from_input_or_attr(ctx, 1, 13, "split", given);
  GeomContext g(ctx.node);
  std::vector<int64_t> sizes =
      ops::split_sizes(g, x.shape[size_t(axis)], has_split ? std::optional(given) : std::nullopt);
  std::vector<int64_t> in_st = row_strides(x.shape);
  int64_t start = 0;
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    Shape out = x.shape;
    out[size_t(axis)] = sizes[size_t(i)];
    GpuTensor& y = ctx.output(i, x.dtype, out);
    record_copy(ctx, x, y, dense_view(out, in_st, start * in_st[size_t(axis)]));
    start += sizes[size_t(i)];
  }
}

}  // namespace

KESTREL_VK_OP(Concat, {.record = concat});
KESTREL_VK_OP(Split, {.record = split, .host_inputs = {1}});

}  // namespace kestrel::vulkan

// Gather (shaders/gather.comp); semantics of src/ops/gather.cpp.
#include "backends/vulkan/ops/movement.h"

namespace kestrel::vulkan {
namespace {

struct GatherPush {
  uint32_t base, n, inner, m;
  int32_t axis;
};

// Indices are a device tensor (int32 storage); negative ones count from the
// end. They are also checked on the host (OpContext::check_values), so an
// out-of-range index is an error naming the node, as on the CPU, and never a
// read the shader would have to clamp; a graph input of indices (a text
// model's token ids) still replays.
void gather(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  const GpuTensor& idx = ctx.input(1);
  if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32)
    ctx.fail("indices must be int32 or int64, got ", dtype_name(idx.dtype));
  int r = int(x.shape.size());
  if (r == 0) ctx.fail("data must have rank >= 1, got a scalar");
  int axis = norm_axis(ctx, ctx.node.attr_i("axis", 0), r);
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  require_i32_indexing(ctx, std::max(x.numel(), shape_numel(out)));
  int64_t inner = 1;
  for (int k = axis + 1; k < r; ++k) inner *= x.shape[size_t(k)];
  const int64_t n = x.shape[size_t(axis)];
  ctx.check_values(1, [where = ctx.node.where(), n, axis](const Tensor& t) {
    if (n == 0 && t.numel() > 0) fail(where, ": gathers from an empty axis ", axis);
    for (int64_t v : t.to_i64())
      if (v < -n || v >= n) fail(where, ": index ", v, " is out of range for axis ", axis, " of size ", n);
  });
  GpuTensor& y = ctx.output(0, x.dtype, out);
  if (y.numel() == 0) return;
  GatherPush p{0, 0, uint32_t(inner), uint32_t(idx.numel()), int32_t(n)};
  ctx.dispatch_elements("gather", {wide(x)}, {In(x), In(idx), Out(y)}, &p, sizeof p, uint64_t(y.numel()));
}

}  // namespace

KESTREL_VK_OP(Gather, {.record = gather});

}  // namespace kestrel::vulkan

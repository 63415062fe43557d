// Gather (shaders/gather.comp); semantics of src/ops/gather.cpp.
#include "backends/vulkan/ops/movement.h"

namespace kestrel::vulkan {
namespace {

struct GatherPush {
  uint32_t base, n, inner, m;
  int32_t axis;
};

// Indices are a device tensor (int32 storage); negative ones count from the
// end. The CPU fails on out-of-range indices; the shader clamps them.
void gather(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  // Indices are read on the host (they are small, usually weights) so that
  // an out-of-range index is an error, as on the CPU, not a clamped read.
  const Tensor& idx = ctx.host_input(1);
  if (idx.dtype() != DType::Int64 && idx.dtype() != DType::Int32)
    ctx.fail("indices must be int32 or int64, got ", dtype_name(idx.dtype()));
  int r = int(x.shape.size());
  if (r == 0) ctx.fail("data must have rank >= 1, got a scalar");
  int axis = norm_axis(ctx, ctx.node.attr_i("axis", 0), r);
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), idx.shape().begin(), idx.shape().end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  require_i32_indexing(ctx, std::max(x.numel(), shape_numel(out)));
  int64_t inner = 1;
  for (int k = axis + 1; k < r; ++k) inner *= x.shape[size_t(k)];
  int64_t n = x.shape[size_t(axis)];
  if (n == 0 && idx.numel() > 0) ctx.fail("gathers from an empty axis ", axis);
  std::vector<int32_t> index;
  for (int64_t v : idx.to_i64()) {
    if (v < -n || v >= n) ctx.fail("index ", v, " is out of range for axis ", axis, " of size ", n);
    index.push_back(int32_t(v));
  }
  GpuTensor& y = ctx.output(0, x.dtype, out);
  if (y.numel() == 0) return;
  GpuTensor it = ctx.upload_i32(index);
  GatherPush p{0, 0, uint32_t(inner), uint32_t(it.numel()), int32_t(n)};
  ctx.dispatch_elements("gather", {wide(x)}, {In(x), In(it), Out(y)}, &p, sizeof p, uint64_t(y.numel()));
}

}  // namespace

KESTREL_VK_OP(Gather, {.record = gather, .host_inputs = {1}});

}  // namespace kestrel::vulkan

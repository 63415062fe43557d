// Slice as a strided view copied out (shaders/copy_nd.comp); semantics of
// src/ops/slice.cpp.
#include <climits>

#include "backends/vulkan/ops/geom_context.h"
#include "backends/vulkan/ops/movement.h"
#include "ops/slice_util.h"

namespace kestrel::vulkan {
namespace {

void slice(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  GeomContext g(ctx.node);
  ops::SliceArgs args = ops::read_slice_args(
      g, [&](int i) { return ctx.has_input(i); }, [&](int i, const char*) { return host_ints(ctx, i); });
  ops::SliceView v = ops::slice_view(g, x.shape, std::move(args));
  if (v.widest_step > INT32_MAX || v.widest_step < -INT32_MAX)
    ctx.unsupported("step ", v.widest_step, " is past int32 indexing");
  GpuTensor& y = ctx.output(0, x.dtype, v.out);
  record_copy(ctx, x, y, dense_view(v.out, v.strides, v.base));
}

}  // namespace

KESTREL_VK_OP(Slice, {.record = slice, .host_inputs = {1, 2, 3, 4}});

}  // namespace kestrel::vulkan

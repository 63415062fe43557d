// Expand and Tile as strided copies (shaders/copy_nd.comp: Tile wraps its
// source coordinates); semantics of src/ops/expand_tile.cpp.
#include "backends/vulkan/ops/movement.h"

namespace kestrel::vulkan {
namespace {

void expand(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  Shape out = broadcast_pair(ctx, x.shape, host_ints(ctx, 1));
  require_rank(ctx, out);
  GpuTensor& y = ctx.output(0, x.dtype, out);
  Dims6 s = broadcast_strides6(x.shape, out);
  record_copy(ctx, x, y, dense_view(out, std::vector<int64_t>(s.d + kMaxRank - out.size(), s.d + kMaxRank)));
}

void tile(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  std::vector<int64_t> reps = host_ints(ctx, 1);
  if (reps.size() != x.shape.size())
    ctx.fail("repeats ", shape_str(reps), " must have one entry per axis of input ", shape_str(x.shape));
  Shape out;
  for (size_t k = 0; k < reps.size(); ++k) {
    if (reps[k] < 0) ctx.fail("repeats ", shape_str(reps), " has a negative entry");
    out.push_back(reps[k] * x.shape[k]);
  }
  require_i32_indexing(ctx, shape_numel(out));
  GpuTensor& y = ctx.output(0, x.dtype, out);
  CopyView v = dense_view(out, row_strides(x.shape));
  v.src_mod = x.shape;
  record_copy(ctx, x, y, v);
}

}  // namespace

KESTREL_VK_OP(Expand, {.min_opset = 8, .record = expand, .host_inputs = {1}});
KESTREL_VK_OP(Tile, {.min_opset = 6, .record = tile, .host_inputs = {1}});

}  // namespace kestrel::vulkan

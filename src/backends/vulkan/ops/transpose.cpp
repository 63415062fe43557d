// Transpose as a strided copy (shaders/copy_nd.comp; batched 2-D transposes take
// shaders/transpose2d.comp); semantics of src/ops/transpose.cpp.
#include "backends/vulkan/ops/movement.h"

namespace kestrel::vulkan {
namespace {

void transpose(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  int r = int(x.shape.size());
  std::vector<int64_t> perm = ctx.node.attr_ints("perm");
  if (perm.empty())
    for (int k = r - 1; k >= 0; --k) perm.push_back(k);
  if (int(perm.size()) != r) ctx.fail("perm ", shape_str(perm), " does not match input ", shape_str(x.shape));
  std::vector<bool> seen(size_t(r), false);
  Shape out;
  std::vector<int64_t> in_st = row_strides(x.shape), st;
  for (int64_t p : perm) {
    int a = norm_axis(ctx, p, r);
    if (seen[size_t(a)]) ctx.fail("perm ", shape_str(perm), " repeats axis ", a);
    seen[size_t(a)] = true;
    out.push_back(x.shape[size_t(a)]);
    st.push_back(in_st[size_t(a)]);
  }
  GpuTensor& y = ctx.output(0, x.dtype, out);
  record_copy(ctx, x, y, dense_view(out, st));
}

}  // namespace

KESTREL_VK_OP(Transpose, {.record = transpose});

}  // namespace kestrel::vulkan

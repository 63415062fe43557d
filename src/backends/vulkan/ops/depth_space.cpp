// DepthToSpace and SpaceToDepth as strided copies (shaders/copy_nd.comp);
// semantics of src/ops/depth_space.cpp.
#include "backends/vulkan/ops/movement.h"

namespace kestrel::vulkan {
namespace {

struct Nchw {
  int64_t n, c, h, w, b;
};
Nchw nchw(const OpContext& ctx, const GpuTensor& x) {
  if (x.shape.size() != 4) ctx.fail("input must be 4-D (NCHW), got ", shape_str(x.shape));
  int64_t b = ctx.node.attr_i("blocksize", 0);
  if (b <= 0) ctx.fail("blocksize must be positive, got ", b);
  return {x.shape[0], x.shape[1], x.shape[2], x.shape[3], b};
}

void depth_to_space(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  auto [n, c, h, w, b] = nchw(ctx, x);
  if (c % (b * b)) ctx.fail("channels ", c, " are not divisible by blocksize^2 = ", b * b);
  int64_t oc = c / (b * b), hw = h * w;
  bool crd = ctx.node.opset >= 11 && ctx.node.attr_s("mode", "DCR") == "CRD";
  // Output viewed as [n, oc, h, b1, w, b2]; the input channel is
  // b1*b*oc + b2*oc + c' (DCR) or c'*b*b + b1*b + b2 (CRD).
  int64_t s_oc = crd ? b * b * hw : hw, s_b1 = crd ? b * hw : b * oc * hw, s_b2 = crd ? hw : oc * hw;
  GpuTensor& y = ctx.output(0, x.dtype, {n, oc, h * b, w * b});
  record_copy(ctx, x, y, dense_view({n, oc, h, b, w, b}, {c * hw, s_oc, w, s_b1, 1, s_b2}));
}

void space_to_depth(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  auto [n, c, h, w, b] = nchw(ctx, x);
  if (h % b || w % b) ctx.fail("spatial size ", h, "x", w, " is not divisible by blocksize ", b);
  int64_t oh = h / b, ow = w / b;
  // Output viewed as [n, b1, b2, c, oh, ow] reading x[n, c, oh*b + b1, ow*b + b2].
  GpuTensor& y = ctx.output(0, x.dtype, {n, c * b * b, oh, ow});
  record_copy(ctx, x, y, dense_view({n, b, b, c, oh, ow}, {c * h * w, w, 1, h * w, b * w, b}));
}

}  // namespace

KESTREL_VK_OP(DepthToSpace, {.record = depth_to_space});
KESTREL_VK_OP(SpaceToDepth, {.record = space_to_depth});

}  // namespace kestrel::vulkan

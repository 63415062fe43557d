// DepthToSpace and SpaceToDepth: fixed 6-D transposes of an NCHW tensor.
#include "ops/movement.h"

namespace kestrel::ops {
namespace {

struct Dims4 {
  int64_t n, c, h, w, b;
};

Dims4 read_dims(const KernelContext& ctx, const Tensor& x) {
  if (x.rank() != 4) ctx.fail("input must be 4-D (NCHW), got ", shape_str(x.shape()));
  int64_t b = ctx.node.attr_i("blocksize", 0);
  if (b <= 0) ctx.fail("blocksize must be positive, got ", b);
  // Both ops multiply channels by blocksize^2 (or divide by it).
  int64_t moved = 0;
  if (!mul_fits(b, b, moved) || !mul_fits(moved, std::max<int64_t>(x.dim(1), 1), moved))
    ctx.fail("blocksize ", b, " squared times ", x.dim(1), " channels overflows int64");
  return {x.dim(0), x.dim(1), x.dim(2), x.dim(3), b};
}

void run_depth_to_space(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto [n, c, h, w, b] = read_dims(ctx, x);
  if (c % (b * b)) ctx.fail("channels ", c, " are not divisible by blocksize^2 = ", b * b);
  int64_t oc = c / (b * b);
  bool crd = ctx.node.opset >= 11 && ctx.node.attr_s("mode", "DCR") == "CRD";
  // Output viewed as [n, oc, h, b1, w, b2]; input channel is b1*b*oc + b2*oc + c' (DCR)
  // or c'*b*b + b1*b + b2 (CRD).
  int64_t hw = h * w;
  int64_t s_oc = crd ? b * b * hw : hw, s_b1 = crd ? b * hw : b * oc * hw, s_b2 = crd ? hw : oc * hw;
  Shape view{n, oc, h, b, w, b};
  std::vector<int64_t> st{c * hw, s_oc, w, s_b1, 1, s_b2};
  Tensor& y = ctx.output(0, x.dtype(), {n, oc, h * b, w * b});
  strided_copy(ctx, x.dtype(), x.raw(), y.raw(), view, st);
}

void run_space_to_depth(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto [n, c, h, w, b] = read_dims(ctx, x);
  if (h % b || w % b) ctx.fail("spatial size ", h, "x", w, " is not divisible by blocksize ", b);
  int64_t oh = h / b, ow = w / b;
  // Output viewed as [n, b1, b2, c, oh, ow] reading x[n, c, oh*b + b1, ow*b + b2].
  Shape view{n, b, b, c, oh, ow};
  std::vector<int64_t> st{c * h * w, w, 1, h * w, b * w, b};
  Tensor& y = ctx.output(0, x.dtype(), {n, c * b * b, oh, ow});
  strided_copy(ctx, x.dtype(), x.raw(), y.raw(), view, st);
}

}  // namespace

KESTREL_OP(DepthToSpace, {.run = run_depth_to_space, .half_native = true});
KESTREL_OP(SpaceToDepth, {.run = run_space_to_depth, .half_native = true});

}  // namespace kestrel::ops

// Reshape, Flatten, Squeeze and Unsqueeze: new shapes over the same bytes
// (outputs alias their input, nothing is copied).
#include "ops/movement.h"
#include "ops/reshape_util.h"

namespace kestrel::ops {
namespace {

void run_reshape(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool allowzero = ctx.node.opset >= 14 && ctx.node.attr_i("allowzero", 0) != 0;
  ctx.set_output(0, x.reshaped(reshape_target(ctx, x.shape(), input_ints(ctx, 1, "shape"), allowzero)));
}

void run_flatten(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ctx.set_output(0, x.reshaped(flatten_shape(ctx, x.shape(), ctx.node.attr_i("axis", 1))));
}

void run_squeeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes;
  bool listed = ints_from_input_or_attr(ctx, 1, 13, "axes", axes);
  ctx.set_output(0, x.reshaped(squeeze_shape(ctx, x.shape(), listed ? &axes : nullptr)));
}

void run_unsqueeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes;
  if (!ints_from_input_or_attr(ctx, 1, 13, "axes", axes)) ctx.fail("axes are required");
  ctx.set_output(0, x.reshaped(unsqueeze_shape(ctx, x.shape(), axes)));
}

}  // namespace

KESTREL_OP(Reshape, {.min_opset = 5, .run = run_reshape, .half_native = true});
KESTREL_OP(Flatten, {.run = run_flatten, .half_native = true});
KESTREL_OP(Squeeze, {.run = run_squeeze, .half_native = true});
KESTREL_OP(Unsqueeze, {.run = run_unsqueeze, .half_native = true});

}  // namespace kestrel::ops

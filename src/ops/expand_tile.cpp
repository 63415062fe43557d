// Expand (numpy broadcast to a shape) and Tile (repeat along each axis):
// both are strided views of the input with zero strides for repeats.
#include "ops/movement.h"

namespace kestrel::ops {
namespace {

void run_expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> want = input_ints(ctx, 1, "shape");
  Shape out = broadcast_shapes(ctx, x.shape(), want);
  Tensor& y = ctx.output(0, x.dtype(), out);
  strided_copy(ctx, x.dtype(), x.raw(), y.raw(), out, broadcast_strides(x.shape(), out));
}

void run_tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> reps = input_ints(ctx, 1, "repeats");
  int r = x.rank();
  if (int(reps.size()) != r)
    ctx.fail("repeats ", shape_str(reps), " must have one entry per axis of input ", shape_str(x.shape()));
  // Output viewed as [reps0, d0, reps1, d1, ...] with zero strides on the repeats.
  std::vector<int64_t> in_st = row_strides(x.shape());
  Shape out, view;
  std::vector<int64_t> st;
  for (int k = 0; k < r; ++k) {
    int64_t n = reps[size_t(k)], d = x.shape()[size_t(k)];
    if (n < 0) ctx.fail("repeats ", shape_str(reps), " has a negative entry");
    int64_t tiled = 0;
    if (!mul_fits(n, d, tiled))
      ctx.fail("repeats ", shape_str(reps), " times input ", shape_str(x.shape()), " overflows int64 on axis ", k);
    out.push_back(tiled);
    view.insert(view.end(), {n, d});
    st.insert(st.end(), {0, in_st[size_t(k)]});
  }
  Tensor& y = ctx.output(0, x.dtype(), out);
  strided_copy(ctx, x.dtype(), x.raw(), y.raw(), view, st);
}

}  // namespace

KESTREL_OP(Expand, {.min_opset = 8, .run = run_expand, .half_native = true});
KESTREL_OP(Tile, {.min_opset = 6, .run = run_tile, .half_native = true});

}  // namespace kestrel::ops

// Slice: a strided view (steps may be negative) copied out densely.
#include "ops/movement.h"
#include "ops/slice_util.h"

namespace kestrel::ops {
namespace {

void run_slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  SliceArgs args = read_slice_args(
      ctx, [&](int i) { return ctx.has_input(i); }, [&](int i, const char* what) { return input_ints(ctx, i, what); });
  SliceView v = slice_view(ctx, x.shape(), std::move(args));
  Tensor& y = ctx.output(0, x.dtype(), v.out);
  if (y.numel() == 0) return;
  strided_copy(ctx, x.dtype(), x.raw() + size_t(v.base) * dtype_size(x.dtype()), y.raw(), v.out, v.strides);
}

}  // namespace

KESTREL_OP(Slice, {.run = run_slice, .half_native = true});

}  // namespace kestrel::ops

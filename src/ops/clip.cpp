// Clip: bounds are attributes before opset 11 and optional scalar inputs from
// 11 on; a missing bound is unbounded. NaN inputs stay NaN, and min > max
// gives max everywhere, as the spec says.
#include "ops/elementwise.h"

namespace kestrel::ops {
namespace {

using namespace ew;

template <typename T>
T bound_input(const KernelContext& ctx, int i, T def) {
  if (!ctx.has_input(i)) return def;
  const Tensor& b = ctx.input(i);
  if (b.dtype() != ctx.input(0).dtype())
    ctx.fail(i == 1 ? "min" : "max", " is ", dtype_name(b.dtype()), " but the input is ",
             dtype_name(ctx.input(0).dtype()));
  if (b.numel() != 1) ctx.fail(i == 1 ? "min" : "max", " must be a scalar, got shape ", shape_str(b.shape()));
  return *b.data<T>();
}

void run_clip(KernelContext& ctx) {
  Numeric::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    if constexpr (std::is_floating_point_v<T>) {
      lo = -std::numeric_limits<T>::infinity();
      hi = std::numeric_limits<T>::infinity();
    }
    if (ctx.node.opset < 11) {
      if (ctx.node.has("min")) lo = T(ctx.node.attr_f("min", 0));
      if (ctx.node.has("max")) hi = T(ctx.node.attr_f("max", 0));
    } else {
      lo = bound_input(ctx, 1, lo);
      hi = bound_input(ctx, 2, hi);
    }
    unary<T, T>(ctx, [lo, hi](T x) {
      T v = x < lo ? lo : x;
      return v > hi ? hi : v;
    });
  });
}

}  // namespace

KESTREL_OP(Clip, {.min_opset = 6, .run = run_clip});

}  // namespace kestrel::ops

// Max Min Sum Mean: any number of inputs, broadcast together, folded pairwise.
// Max and Min propagate NaN (either operand NaN gives NaN), as ONNX Runtime does.
#include "ops/elementwise.h"

namespace kestrel::ops {
namespace {

using namespace ew;

// Folds f over all inputs; `finish` may rewrite the (freshly allocated) result in place.
template <typename TypeSet, typename F, typename Finish>
void fold(KernelContext& ctx, F f, Finish finish) {
  int n = ctx.num_inputs();
  if (n == 0) ctx.fail("needs at least one input");
  require_same_types(ctx, 0, n);
  TypeSet::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    // One input is its own Max, Min, Sum and Mean.
    if (n == 1) return ctx.set_output(0, ctx.input(0));
    Tensor acc = ctx.input(0);
    for (int i = 1; i < n; ++i) {
      const Tensor& b = ctx.input(i);
      auto p = plan_broadcast<2>(ctx, {&acc.shape(), &b.shape()});
      Tensor next(acc.dtype(), p.out);
      binary_loop(ctx, p, acc.data<T>(), b.data<T>(), next.data<T>(), [&](T x, T y) { return T(f(x, y)); });
      acc = std::move(next);
    }
    finish(ctx, acc, static_cast<T*>(nullptr));
    ctx.set_output(0, std::move(acc));
  });
}

constexpr auto kKeep = [](KernelContext&, Tensor&, auto*) {};

void run_max(KernelContext& ctx) {
  fold<Numeric>(ctx, [](auto a, auto b) { return (a > b || a != a) ? a : b; }, kKeep);
}
void run_min(KernelContext& ctx) {
  fold<Numeric>(ctx, [](auto a, auto b) { return (a < b || a != a) ? a : b; }, kKeep);
}
void run_sum(KernelContext& ctx) {
  fold<Floats>(ctx, [](auto a, auto b) { return a + b; }, kKeep);
}
void run_mean(KernelContext& ctx) {
  fold<Floats>(ctx, [](auto a, auto b) { return a + b; }, [](KernelContext& c, Tensor& acc, auto* tag) {
    KESTREL_EW_TYPE(tag);
    const T inv = T(1) / T(c.num_inputs());
    T* d = acc.data<T>();
    parallel_for(c, (acc.numel() + kTaskElems - 1) / kTaskElems, 1, [&](int64_t t) {
      for (int64_t i = t * kTaskElems, e = std::min(acc.numel(), i + kTaskElems); i < e; ++i) d[i] *= inv;
    });
  });
}

}  // namespace

KESTREL_OP(Max, {.run = run_max});
KESTREL_OP(Min, {.run = run_min});
KESTREL_OP(Sum, {.run = run_sum});
KESTREL_OP(Mean, {.run = run_mean});

}  // namespace kestrel::ops

// Broadcasting comparisons (Equal Greater GreaterOrEqual Less LessOrEqual)
// and boolean logic (And Or Xor Not); all produce bool.
#include "ops/elementwise.h"

namespace kestrel::ops {
namespace {

using namespace ew;

template <typename TypeSet, typename F>
void to_bool_binary(KernelContext& ctx, F f) {
  require_same_types(ctx, 0, 2);
  TypeSet::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    binary<T, T, bool>(ctx, [&](T a, T b) { return bool(f(a, b)); });
  });
}

void run_equal(KernelContext& ctx) {
  to_bool_binary<NumericBool>(ctx, [](auto a, auto b) { return a == b; });
}
void run_greater(KernelContext& ctx) {
  to_bool_binary<Numeric>(ctx, [](auto a, auto b) { return a > b; });
}
void run_greater_equal(KernelContext& ctx) {
  to_bool_binary<Numeric>(ctx, [](auto a, auto b) { return a >= b; });
}
void run_less(KernelContext& ctx) {
  to_bool_binary<Numeric>(ctx, [](auto a, auto b) { return a < b; });
}
void run_less_equal(KernelContext& ctx) {
  to_bool_binary<Numeric>(ctx, [](auto a, auto b) { return a <= b; });
}
void run_and(KernelContext& ctx) {
  to_bool_binary<Types<bool>>(ctx, [](bool a, bool b) { return a && b; });
}
void run_or(KernelContext& ctx) {
  to_bool_binary<Types<bool>>(ctx, [](bool a, bool b) { return a || b; });
}
void run_xor(KernelContext& ctx) {
  to_bool_binary<Types<bool>>(ctx, [](bool a, bool b) { return a != b; });
}

void run_not(KernelContext& ctx) {
  Types<bool>::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto*) {
    unary<bool, bool>(ctx, [](bool x) { return !x; });
  });
}

}  // namespace

KESTREL_OP(Equal, {.min_opset = 7, .run = run_equal});
KESTREL_OP(Greater, {.min_opset = 7, .run = run_greater});
KESTREL_OP(GreaterOrEqual, {.min_opset = 12, .run = run_greater_equal});
KESTREL_OP(Less, {.min_opset = 7, .run = run_less});
KESTREL_OP(LessOrEqual, {.min_opset = 12, .run = run_less_equal});
KESTREL_OP(And, {.min_opset = 7, .run = run_and});
KESTREL_OP(Or, {.min_opset = 7, .run = run_or});
KESTREL_OP(Xor, {.min_opset = 7, .run = run_xor});
KESTREL_OP(Not, {.run = run_not});

}  // namespace kestrel::ops

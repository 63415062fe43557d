// Unary math ops: Abs Neg Sign Ceil Floor Round Sqrt Reciprocal Exp Log, the
// trigonometric and hyperbolic functions, Erf, and the predicates IsNaN IsInf.
#include "ops/elementwise.h"

namespace kestrel::ops {
namespace {

using namespace ew;

// -x for integers without the undefined behaviour of negating the minimum
// value: it wraps, as two's complement hardware and ONNX Runtime do.
template <typename T>
T wrap_neg(T x) {
  if constexpr (std::is_integral_v<T>) return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(x));
  else return -x;
}

void run_abs(KernelContext& ctx) {
  Numeric::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    if constexpr (std::is_unsigned_v<T>) ctx.set_output(0, ctx.input(0));
    else unary<T, T>(ctx, [](T x) { return x < T(0) ? wrap_neg(x) : x; });
  });
}

void run_neg(KernelContext& ctx) {
  Signed::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    unary<T, T>(ctx, [](T x) { return wrap_neg(x); });
  });
}

void run_sign(KernelContext& ctx) {
  Numeric::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    // Zero and NaN map to themselves.
    if constexpr (std::is_unsigned_v<T>) unary<T, T>(ctx, [](T x) { return T(x != 0); });
    else unary<T, T>(ctx, [](T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x); });
  });
}

// Float-only ops: F is a generic lambda applied to float or double.
template <typename F>
void float_unary(KernelContext& ctx, F f) {
  Floats::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    unary<T, T>(ctx, [&](T x) { return T(f(x)); });
  });
}

#define KESTREL_FLOAT_UNARY(NAME, EXPR)                                             \
  void run_##NAME(KernelContext& ctx) {                                            \
    float_unary(ctx, [](auto x) { return EXPR; });                                  \
  }
KESTREL_FLOAT_UNARY(ceil, std::ceil(x))
KESTREL_FLOAT_UNARY(floor, std::floor(x))
KESTREL_FLOAT_UNARY(round, std::nearbyint(x))  // ties to even in the default rounding mode
KESTREL_FLOAT_UNARY(sqrt, std::sqrt(x))
KESTREL_FLOAT_UNARY(reciprocal, decltype(x)(1) / x)
KESTREL_FLOAT_UNARY(exp, fast_exp(x))
KESTREL_FLOAT_UNARY(log, std::log(x))
KESTREL_FLOAT_UNARY(sin, std::sin(x))
KESTREL_FLOAT_UNARY(cos, std::cos(x))
KESTREL_FLOAT_UNARY(tan, std::tan(x))
KESTREL_FLOAT_UNARY(asin, std::asin(x))
KESTREL_FLOAT_UNARY(acos, std::acos(x))
KESTREL_FLOAT_UNARY(atan, std::atan(x))
KESTREL_FLOAT_UNARY(sinh, std::sinh(x))
KESTREL_FLOAT_UNARY(cosh, std::cosh(x))
KESTREL_FLOAT_UNARY(asinh, std::asinh(x))
KESTREL_FLOAT_UNARY(acosh, std::acosh(x))
KESTREL_FLOAT_UNARY(atanh, std::atanh(x))
KESTREL_FLOAT_UNARY(tanh, fast_tanh(x))
KESTREL_FLOAT_UNARY(erf, fast_erf(x))
#undef KESTREL_FLOAT_UNARY

void run_isnan(KernelContext& ctx) {
  Floats::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    unary<T, bool>(ctx, [](T x) { return x != x; });
  });
}

void run_isinf(KernelContext& ctx) {
  bool pos = ctx.node.attr_i("detect_positive", 1) != 0, neg = ctx.node.attr_i("detect_negative", 1) != 0;
  Floats::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    constexpr T inf = std::numeric_limits<T>::infinity();
    unary<T, bool>(ctx, [=](T x) { return (pos && x == inf) || (neg && x == -inf); });
  });
}

}  // namespace

KESTREL_OP(Abs, {.run = run_abs});
KESTREL_OP(Neg, {.run = run_neg});
KESTREL_OP(Sign, {.min_opset = 9, .run = run_sign});
KESTREL_OP(Ceil, {.run = run_ceil});
KESTREL_OP(Floor, {.run = run_floor});
KESTREL_OP(Round, {.min_opset = 11, .run = run_round});
KESTREL_OP(Sqrt, {.run = run_sqrt});
KESTREL_OP(Reciprocal, {.run = run_reciprocal});
KESTREL_OP(Exp, {.run = run_exp});
KESTREL_OP(Log, {.run = run_log});
KESTREL_OP(Sin, {.min_opset = 7, .run = run_sin});
KESTREL_OP(Cos, {.min_opset = 7, .run = run_cos});
KESTREL_OP(Tan, {.min_opset = 7, .run = run_tan});
KESTREL_OP(Asin, {.min_opset = 7, .run = run_asin});
KESTREL_OP(Acos, {.min_opset = 7, .run = run_acos});
KESTREL_OP(Atan, {.min_opset = 7, .run = run_atan});
KESTREL_OP(Sinh, {.min_opset = 9, .run = run_sinh});
KESTREL_OP(Cosh, {.min_opset = 9, .run = run_cosh});
KESTREL_OP(Asinh, {.min_opset = 9, .run = run_asinh});
KESTREL_OP(Acosh, {.min_opset = 9, .run = run_acosh});
KESTREL_OP(Atanh, {.min_opset = 9, .run = run_atanh});
KESTREL_OP(Tanh, {.run = run_tanh});
KESTREL_OP(Erf, {.min_opset = 9, .run = run_erf});
KESTREL_OP(IsNaN, {.min_opset = 9, .run = run_isnan});
KESTREL_OP(IsInf, {.min_opset = 10, .run = run_isinf});

}  // namespace kestrel::ops

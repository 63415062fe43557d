// Broadcasting arithmetic: Add Sub Mul Div Pow Mod BitShift.
// Integer division and modulo by zero give 0 (ONNX leaves it undefined; a
// crash is not an option), and the one overflowing quotient, MIN / -1, wraps.
#include "ops/elementwise.h"

namespace kestrel::ops {
namespace {

using namespace ew;

// Output = f(a, b) over same-typed inputs of a type in TypeSet.
template <typename TypeSet, typename F>
void same_type_binary(KernelContext& ctx, F f) {
  require_same_types(ctx, 0, 2);
  TypeSet::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    binary<T, T, T>(ctx, [&](T a, T b) { return T(f(a, b)); });
  });
}

template <typename T>
T int_div(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1)) return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(a));
  return T(a / b);
}

void run_add(KernelContext& ctx) {
  same_type_binary<Numeric>(ctx, [](auto a, auto b) { return a + b; });
}
void run_sub(KernelContext& ctx) {
  same_type_binary<Numeric>(ctx, [](auto a, auto b) { return a - b; });
}
void run_mul(KernelContext& ctx) {
  same_type_binary<Numeric>(ctx, [](auto a, auto b) { return a * b; });
}
void run_div(KernelContext& ctx) {
  same_type_binary<Numeric>(ctx, [](auto a, auto b) {
    if constexpr (std::is_integral_v<decltype(a)>) return int_div(a, b);
    else return a / b;
  });
}

// Exact integer power by squaring; negative exponents truncate toward 0
// (only bases 1 and -1 keep a nonzero result; 0 to a negative power gives 0).
template <typename T, typename E>
T int_pow(T base, E e) {
  if (e < 0) return base == 1 ? T(1) : base == T(-1) ? T((e % 2) ? -1 : 1) : T(0);
  using U = std::make_unsigned_t<T>;  // wrapping multiplication
  U r = 1, b = U(base);
  for (auto k = std::make_unsigned_t<E>(e); k; k >>= 1) {
    if (k & 1) r = U(r * b);
    b = U(b * b);
  }
  return T(r);
}

void run_pow(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  Types<float, double, int32_t, int64_t>::dispatch(ctx, x.dtype(), "base", [&](auto* tb) {
    using T = std::remove_pointer_t<decltype(tb)>;
    Numeric::dispatch(ctx, y.dtype(), "exponent", [&](auto* te) {
      using E = std::remove_pointer_t<decltype(te)>;
      if constexpr (std::is_floating_point_v<T>) {
        // Constant small exponents (x^2 in normalisations) skip pow.
        if (y.numel() == 1) {
          T e = T(*y.data<E>());
          if (e == T(2)) return binary<T, E, T>(ctx, [](T a, E) { return a * a; });
          if (e == T(3)) return binary<T, E, T>(ctx, [](T a, E) { return a * a * a; });
          if (e == T(1)) return binary<T, E, T>(ctx, [](T a, E) { return a; });
        }
        binary<T, E, T>(ctx, [](T a, E b) { return T(std::pow(a, T(b))); });
      } else if constexpr (std::is_integral_v<E>) {
        binary<T, E, T>(ctx, [](T a, E b) { return int_pow(a, b); });
      } else {
        binary<T, E, T>(ctx, [](T a, E b) { return T(std::pow(double(a), double(b))); });
      }
    });
  });
}

void run_mod(KernelContext& ctx) {
  bool c_fmod = ctx.node.attr_i("fmod", 0) != 0;
  if (!c_fmod && dtype_is_float(ctx.input(0).dtype()))
    ctx.fail("fmod=0 is not allowed for floating point inputs (", dtype_name(ctx.input(0).dtype()),
             "); ONNX requires fmod=1");
  same_type_binary<Numeric>(ctx, [c_fmod](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_floating_point_v<T>) {
      return std::fmod(a, b);
    } else {
      if (b == 0) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);  // avoids the MIN % -1 trap
        T r = T(a % b);
        // fmod=0 follows the divisor's sign, like Python's %.
        if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r = T(r + b);
        return r;
      } else {
        return T(a % b);
      }
    }
  });
}

void run_bitshift(KernelContext& ctx) {
  std::string dir = ctx.node.attr_s("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") ctx.fail("direction must be LEFT or RIGHT, got '", dir, "'");
  bool left = dir == "LEFT";
  same_type_binary<UnsignedInts>(ctx, [left](auto a, auto b) {
    using T = decltype(a);
    // Shifting by the width or more is undefined in C++; every bit is shifted out.
    if (b >= T(sizeof(T) * 8)) return T(0);
    return left ? T(a << b) : T(a >> b);
  });
}

}  // namespace

KESTREL_OP(Add, {.min_opset = 7, .run = run_add});
KESTREL_OP(Sub, {.min_opset = 7, .run = run_sub});
KESTREL_OP(Mul, {.min_opset = 7, .run = run_mul});
KESTREL_OP(Div, {.min_opset = 7, .run = run_div});
KESTREL_OP(Pow, {.min_opset = 7, .run = run_pow});
KESTREL_OP(Mod, {.min_opset = 10, .run = run_mod});
KESTREL_OP(BitShift, {.min_opset = 11, .run = run_bitshift});

}  // namespace kestrel::ops

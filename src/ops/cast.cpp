// Cast and CastLike between every element type Kestrel holds, float16 and
// bfloat16 included (converted directly, not through the float32 widening).
// Integer targets wrap like numpy's astype; float-to-int truncates toward 0;
// anything nonzero (NaN included) is true. Strings are not supported.
#include "ops/elementwise.h"

namespace kestrel::ops {
namespace {
// Stand-ins for the two 16-bit float formats, stored as their bits.
struct Half { uint16_t bits; };
struct BHalf { uint16_t bits; };
}  // namespace
}  // namespace kestrel::ops

// So the type dispatcher can match them.
template <> struct kestrel::DTypeOf<kestrel::ops::Half> { static constexpr DType value = DType::Float16; };
template <> struct kestrel::DTypeOf<kestrel::ops::BHalf> { static constexpr DType value = DType::BFloat16; };

namespace kestrel::ops {
namespace {

using namespace ew;

using AllTypes = Join<NumericBool, Types<Half, BHalf>>;

template <typename S>
auto load(S v) {
  if constexpr (std::is_same_v<S, Half>) return half_to_float(v.bits);
  else if constexpr (std::is_same_v<S, BHalf>) return bf16_to_float(v.bits);
  else return v;
}

template <typename D, typename V>
D store(V v) {
  if constexpr (std::is_same_v<D, Half>) return Half{float_to_half(float(v))};
  else if constexpr (std::is_same_v<D, BHalf>) return BHalf{float_to_bf16(float(v))};
  else if constexpr (std::is_same_v<D, bool>) return v != V(0);
  else return static_cast<D>(v);
}

void cast_to(KernelContext& ctx, DType to) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() == DType::String || to == DType::String)
    ctx.fail("casting from ", dtype_name(x.dtype()), " to ", dtype_name(to),
             " is not supported: Kestrel has no string tensors");
  if (!dtype_supported(to)) ctx.fail("target type ", dtype_name(to), " (", int(to), ") is not supported");
  if (x.dtype() == to) return ctx.set_output(0, x);
  AllTypes::dispatch(ctx, x.dtype(), "input", [&](auto* stag) {
    using S = std::remove_pointer_t<decltype(stag)>;
    AllTypes::dispatch(ctx, to, "target", [&](auto* dtag) {
      using D = std::remove_pointer_t<decltype(dtag)>;
      Tensor& y = ctx.output(0, to, x.shape());
      unary_loop(ctx, x.data<S>(), y.data<D>(), x.numel(), [](S v) { return store<D>(load(v)); });
    });
  });
}

void run_cast(KernelContext& ctx) {
  const ir::Attribute* to = ctx.node.attr("to");
  if (!to) ctx.fail("missing the 'to' attribute");
  cast_to(ctx, DType(to->i));
}

void run_cast_like(KernelContext& ctx) { cast_to(ctx, ctx.input(1).dtype()); }

}  // namespace

KESTREL_OP(Cast, {.min_opset = 6, .run = run_cast, .half_native = true});
KESTREL_OP(CastLike, {.min_opset = 15, .run = run_cast_like, .half_native = true});

}  // namespace kestrel::ops

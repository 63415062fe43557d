// Where: out = cond ? X : Y with three-way broadcasting. Elements are only
// selected, never computed on, so it runs on unsigned integers of the element
// size and handles every type (float16 included) natively.
#include "ops/elementwise.h"

namespace kestrel::ops {
namespace {

using namespace ew;

template <typename T>
void select(const KernelContext& ctx, const BroadcastPlan<3>& p, const bool* c, const T* x, const T* y, T* o) {
  for_each_segment<3>(ctx, p, [&](const std::array<int64_t, 3>& off, int64_t oo, int64_t n,
                                  const std::array<int64_t, 3>& s) {
    const bool* __restrict cc = c + off[0];
    const uint8_t* __restrict cb = reinterpret_cast<const uint8_t*>(cc);  // bools are bytes of 0 or 1
    const T* __restrict xx = x + off[1];
    const T* __restrict yy = y + off[2];
    T* __restrict d = o + oo;
    if (!s[0]) {  // one condition for the whole row: a copy or a fill
      const T* src = *cc ? xx : yy;
      if (*cc ? s[1] : s[2]) std::copy_n(src, n, d);
      else std::fill_n(d, n, *src);
      return;
    }
    // Each of X and Y is either a vector or a scalar along the row.
    auto run = [&](auto x_vec, auto y_vec) {
      const T xv = *xx, yv = *yy;
      for (int64_t i = 0; i < n; ++i) {
        // Both read and blended through an all-ones/zero mask of T's width, which
        // vectorizes where a select on the byte-wide bool does not.
        const T a = x_vec ? xx[i] : xv, b = y_vec ? yy[i] : yv;
        const T m = T(T(0) - T(cb[i]));
        d[i] = T((a & m) | (b & T(~m)));
      }
    };
    if (s[1] && s[2]) run(std::true_type(), std::true_type());
    else if (s[1]) run(std::true_type(), std::false_type());
    else if (s[2]) run(std::false_type(), std::true_type());
    else run(std::false_type(), std::false_type());
  });
}

void run_where(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (c.dtype() != DType::Bool) ctx.fail("condition must be bool, got ", dtype_name(c.dtype()));
  require_same_types(ctx, 1, 3);
  auto p = plan_broadcast<3>(ctx, {&c.shape(), &x.shape(), &y.shape()});
  Tensor& o = ctx.output(0, x.dtype(), p.out);
  switch (dtype_size(x.dtype())) {
    case 1: return select(ctx, p, c.data<bool>(), x.data<uint8_t>(), y.data<uint8_t>(), o.data<uint8_t>());
    case 2: return select(ctx, p, c.data<bool>(), x.data<uint16_t>(), y.data<uint16_t>(), o.data<uint16_t>());
    case 4: return select(ctx, p, c.data<bool>(), x.data<uint32_t>(), y.data<uint32_t>(), o.data<uint32_t>());
    case 8: return select(ctx, p, c.data<bool>(), x.data<uint64_t>(), y.data<uint64_t>(), o.data<uint64_t>());
    default: ctx.fail("element type ", dtype_name(x.dtype()), " is not supported");
  }
}

}  // namespace

KESTREL_OP(Where, {.min_opset = 9, .run = run_where, .half_native = true});

}  // namespace kestrel::ops

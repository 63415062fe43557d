// Shared machinery of Kestrel's elementwise ops: type dispatch over a chosen
// set of element types, numpy broadcasting reduced to contiguous row segments,
// unary/binary/ternary loops the compiler can vectorize, and a vectorizable exp.
//
// Broadcasting is planned once per node: output dims of size 1 are dropped and
// adjacent dims merged wherever every input steps through them contiguously
// (or not at all). What remains is a set of rows over the innermost merged dim
// in which each input has stride 1 or 0, so the per-element loop is one of
// "vector op vector", "vector op scalar" or "scalar op vector" -- the shapes
// of CNN feature maps with per-channel or scalar operands all land there.
#pragma once
// (The library is built with -fno-trapping-math, see CMakeLists.txt: without
// it GCC will not turn clamps like min(max(x, 0), 1) into vector selects.)
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "ops/common.h"

namespace kestrel::ops::ew {

// ---------------------------------------------------------------- type dispatch

template <typename... Ts>
struct Types {
  // Calls f(T*) with a null pointer of the type matching `t`; fails naming the
  // node and the accepted types otherwise.
  template <typename F>
  static void dispatch(const KernelContext& ctx, DType t, const char* what, F&& f) {
    bool done = ((DTypeOf<Ts>::value == t ? (f(static_cast<Ts*>(nullptr)), true) : false) || ...);
    if (!done) {
      std::string names;
      ((names += (names.empty() ? "" : ", ") + std::string(dtype_name(DTypeOf<Ts>::value))), ...);
      ctx.fail(what, " of type ", dtype_name(t), " is not supported (expected one of: ", names, ")");
    }
  }
};
template <typename... A, typename... B>
Types<A..., B...> operator+(Types<A...>, Types<B...>);
template <typename A, typename B>
using Join = decltype(A() + B());

using Floats = Types<float, double>;
using SignedInts = Types<int8_t, int16_t, int32_t, int64_t>;
using UnsignedInts = Types<uint8_t, uint16_t, uint32_t, uint64_t>;
using Ints = Join<SignedInts, UnsignedInts>;
using Signed = Join<Floats, SignedInts>;
using Numeric = Join<Floats, Ints>;
using NumericBool = Join<Numeric, Types<bool>>;

#define KESTREL_EW_TYPE(tag) using T = std::remove_pointer_t<decltype(tag)>

// Fails unless inputs [first, last) all have input `first`'s type.
inline void require_same_types(const KernelContext& ctx, int first, int last) {
  for (int i = first + 1; i < last; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype() != ctx.input(first).dtype())
      ctx.fail("input ", i, " is ", dtype_name(ctx.input(i).dtype()), " but input ", first, " is ",
               dtype_name(ctx.input(first).dtype()), "; they must have the same type");
}

// ---------------------------------------------------------------- broadcasting

// Elements per parallel task: big enough to amortize the fork, small enough to
// split a single feature map across cores.
constexpr int64_t kTaskElems = 16384;

template <size_t N>
struct BroadcastPlan {
  Shape out;                                   // the broadcast output shape
  std::vector<int64_t> dims;                   // merged dims, innermost last
  std::array<std::vector<int64_t>, N> stride;  // per input, per merged dim
};

template <size_t N>
BroadcastPlan<N> plan_broadcast(const KernelContext& ctx, const std::array<const Shape*, N>& in) {
  BroadcastPlan<N> p;
  p.out = *in[0];
  for (size_t k = 1; k < N; ++k) p.out = broadcast_shapes(ctx, p.out, *in[k]);
  std::array<std::vector<int64_t>, N> full;
  for (size_t k = 0; k < N; ++k) full[k] = broadcast_strides(*in[k], p.out);
  for (size_t d = 0; d < p.out.size(); ++d) {
    if (p.out[d] == 1) continue;
    bool merge = !p.dims.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = p.stride[k].back() == full[k][d] * p.out[d];
    if (merge) {
      p.dims.back() *= p.out[d];
      for (size_t k = 0; k < N; ++k) p.stride[k].back() = full[k][d];
    } else {
      p.dims.push_back(p.out[d]);
      for (size_t k = 0; k < N; ++k) p.stride[k].push_back(full[k][d]);
    }
  }
  if (p.dims.empty()) {  // a single element
    p.dims.push_back(1);
    for (size_t k = 0; k < N; ++k) p.stride[k].push_back(0);
  }
  return p;
}

// Calls f(offsets of each input, output offset, length, inner strides) for
// contiguous output segments covering the plan, in parallel when large.
// Inner strides are 0 or 1; offsets are in elements.
template <size_t N, typename F>
void for_each_segment(const KernelContext& ctx, const BroadcastPlan<N>& p, F&& f) {
  int64_t total = shape_numel(p.out);
  if (total == 0) return;
  const int r = int(p.dims.size());
  const int64_t L = p.dims.back(), rows = total / L;
  const int64_t pieces = (L + kTaskElems - 1) / kTaskElems, piece_len = (L + pieces - 1) / pieces;
  const int64_t items = rows * pieces, per_task = std::max<int64_t>(1, kTaskElems / piece_len);
  const int64_t tasks = (items + per_task - 1) / per_task;
  std::array<int64_t, N> inner;
  for (size_t k = 0; k < N; ++k) inner[k] = p.stride[k].back();
  parallel_for(ctx, tasks, 1, [&](int64_t t) {
    int64_t i0 = t * per_task, i1 = std::min(items, i0 + per_task);
    int64_t row = i0 / pieces, piece = i0 % pieces;
    // Multi-index of `row` over the outer merged dims, and each input's offset.
    std::vector<int64_t> idx(size_t(std::max(r - 1, 0)));
    std::array<int64_t, N> base{};
    int64_t q = row;
    for (int d = r - 2; d >= 0; --d) {
      idx[size_t(d)] = q % p.dims[size_t(d)];
      q /= p.dims[size_t(d)];
      for (size_t k = 0; k < N; ++k) base[k] += idx[size_t(d)] * p.stride[k][size_t(d)];
    }
    for (int64_t i = i0; i < i1; ++i) {
      int64_t start = piece * piece_len, len = std::min(piece_len, L - start);
      std::array<int64_t, N> off;
      for (size_t k = 0; k < N; ++k) off[k] = base[k] + start * inner[k];
      f(off, row * L + start, len, inner);
      if (++piece == pieces) {
        piece = 0;
        ++row;
        for (int d = r - 2; d >= 0; --d) {  // odometer step of the outer index
          for (size_t k = 0; k < N; ++k) base[k] += p.stride[k][size_t(d)];
          if (++idx[size_t(d)] < p.dims[size_t(d)]) break;
          for (size_t k = 0; k < N; ++k) base[k] -= idx[size_t(d)] * p.stride[k][size_t(d)];
          idx[size_t(d)] = 0;
        }
      }
    }
  });
}

// ---------------------------------------------------------------- loops

// out[i] = f(in[i]) over n elements, in parallel chunks.
template <typename TI, typename TO, typename F>
void unary_loop(const KernelContext& ctx, const TI* in, TO* out, int64_t n, F f) {
  int64_t tasks = (n + kTaskElems - 1) / kTaskElems;
  parallel_for(ctx, tasks, 1, [&](int64_t t) {
    int64_t b = t * kTaskElems, e = std::min(n, b + kTaskElems);
    const TI* __restrict s = in + b;
    TO* __restrict d = out + b;
    for (int64_t i = 0; i < e - b; ++i) d[i] = f(s[i]);
  });
}

// Runs f over input 0 into a new output 0 of type TO (same shape).
template <typename TI, typename TO, typename F>
void unary(KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0, DTypeOf<TO>::value, x.shape());
  unary_loop(ctx, x.data<TI>(), y.data<TO>(), x.numel(), f);
}

// One broadcast row: the three stride cases get their own loops so each
// vectorizes; strides are 0 or 1.
template <typename TA, typename TB, typename TO, typename F>
inline void binary_row(const TA* __restrict a, int64_t sa, const TB* __restrict b, int64_t sb, TO* __restrict o,
                       int64_t n, F& f) {
  if (sa && sb) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  } else if (sa) {
    const TB bv = *b;
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv);
  } else if (sb) {
    const TA av = *a;
    for (int64_t i = 0; i < n; ++i) o[i] = f(av, b[i]);
  } else {
    const TO v = f(*a, *b);
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}

template <typename TA, typename TB, typename TO, typename F>
void binary_loop(const KernelContext& ctx, const BroadcastPlan<2>& p, const TA* a, const TB* b, TO* o, F f) {
  for_each_segment<2>(ctx, p, [&](const std::array<int64_t, 2>& off, int64_t oo, int64_t n,
                                  const std::array<int64_t, 2>& s) {
    binary_row(a + off[0], s[0], b + off[1], s[1], o + oo, n, f);
  });
}

// Output 0 = f(input 0, input 1) broadcast, with input types TA, TB and output TO.
template <typename TA, typename TB, typename TO, typename F>
void binary(KernelContext& ctx, F f) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  auto p = plan_broadcast<2>(ctx, {&a.shape(), &b.shape()});
  Tensor& o = ctx.output(0, DTypeOf<TO>::value, p.out);
  binary_loop(ctx, p, a.data<TA>(), b.data<TB>(), o.data<TO>(), f);
}

// ---------------------------------------------------------------- math

// exp(x) for float in a form GCC vectorizes (no calls, no branches): Cephes'
// polynomial on x - n*ln2, scaled by 2^n split in two halves so that results
// down to the subnormal range and overflow to +inf both come out right.
// About 1 ulp; NaN stays NaN.
inline float fast_exp(float x) {
  float xc = x < -104.0f ? -104.0f : (x > 88.8f ? 88.8f : x);  // NaN compares false: kept
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  float r = xc - n * 0.693359375f - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // Converting NaN to int is undefined: convert 0 instead (a select, so the
  // loop still vectorizes); p is NaN already, so the result stays NaN.
  int32_t ni = int32_t(n == n ? n : 0.0f);
  int32_t h = ni >> 1;
  float s1 = std::bit_cast<float>((h + 127) << 23);
  float s2 = std::bit_cast<float>((ni - h + 127) << 23);
  return p * s1 * s2;
}
inline double fast_exp(double x) { return std::exp(x); }

template <typename T>
inline T sigmoid(T x) {
  return T(1) / (T(1) + fast_exp(-x));
}

// tanh via exp, with an odd Taylor polynomial near 0 where 1 - 2/(e^2x + 1)
// would cancel. Both sides are computed so the select vectorizes.
inline float fast_tanh(float x) {
  float ax = std::fabs(x);
  float e = fast_exp(2.0f * ax);
  float big = 1.0f - 2.0f / (e + 1.0f);
  float x2 = x * x;
  float small = x * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * -0.053968254f)));
  return ax < 0.125f ? small : std::copysign(big, x);
}
inline double fast_tanh(double x) { return std::tanh(x); }

// erf for float without calls or branches: an odd Taylor polynomial below
// |x| = 0.5 (where the tail form below loses relative accuracy) and
// Abramowitz & Stegun 7.1.26 above it. Error under 6e-7 relative; NaN stays NaN.
inline float fast_erf(float x) {
  float ax = std::fabs(x), x2 = x * x;
  float small = x * (1.128379167f + x2 * (-0.3761263890f + x2 * (0.1128379167f + x2 * (-0.02686617064f +
                x2 * (0.005223977625f + x2 * -0.0008548327023f)))));
  float t = 1.0f / (1.0f + 0.3275911f * ax);
  float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  float big = 1.0f - poly * fast_exp(-x2);
  return ax < 0.5f ? small : std::copysign(big, x);
}
inline double fast_erf(double x) { return std::erf(x); }

}  // namespace kestrel::ops::ew

// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceLogSum, ReduceLogSumExp, ReduceSumSquare.
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/reduce_util.h"

namespace kestrel::ops {
namespace {

// Integer accumulators wrap around on overflow, as two's complement (what
// ONNX Runtime's plain loops give), without a signed overflow's undefined
// behaviour; float ones add and multiply as usual.
template <typename A> A wrapping_add(A a, A b) {
  if constexpr (std::is_integral_v<A>) return A(std::make_unsigned_t<A>(a) + std::make_unsigned_t<A>(b));
  else return a + b;
}
template <typename A> A wrapping_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) return A(std::make_unsigned_t<A>(a) * std::make_unsigned_t<A>(b));
  else return a * b;
}

// Each reducer: an accumulator type, its start value, how an element joins it
// and how the result is read out (given the element count).
template <typename T>
struct SumR {
  using A = acc_t<T>;
  static A init() { return 0; }
  static void add(A& a, T x) { a = wrapping_add(a, A(x)); }
  static T finish(A a, int64_t) { return T(a); }
};
template <typename T>
struct MeanR : SumR<T> {
  using A = acc_t<T>;
  static T finish(A a, int64_t n) {
    if constexpr (std::is_floating_point_v<T>) return T(n ? a / double(n) : NAN);
    else return n ? T(a / A(n)) : T(0);
  }
};
template <typename T>
struct SumSquareR : SumR<T> {
  using A = acc_t<T>;
  static void add(A& a, T x) { a = wrapping_add(a, wrapping_mul(A(x), A(x))); }
};
template <typename T>
struct L1R : SumR<T> {
  using A = acc_t<T>;
  static void add(A& a, T x) {
    if constexpr (std::is_signed_v<T>) a = wrapping_add(a, x < 0 ? wrapping_mul(A(x), A(-1)) : A(x));
    else a = wrapping_add(a, A(x));
  }
};
template <typename T>
struct L2R : SumSquareR<T> {
  using A = acc_t<T>;
  static T finish(A a, int64_t) { return T(std::sqrt(double(a))); }
};
template <typename T>
struct LogSumR : SumR<T> {
  using A = acc_t<T>;
  static T finish(A a, int64_t) { return T(std::log(double(a))); }
};
template <typename T>
struct ProdR {
  using A = acc_t<T>;
  static A init() { return 1; }
  static void add(A& a, T x) { a = wrapping_mul(a, A(x)); }
  static T finish(A a, int64_t) { return T(a); }
};
template <typename T>
struct MaxR {
  using A = T;
  static A init() {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  // NaN wins, as in NumPy.
  static void add(A& a, T x) { a = (x > a || x != x) ? x : a; }
  static T finish(A a, int64_t) { return a; }
};
template <typename T>
struct MinR {
  using A = T;
  static A init() {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
  }
  static void add(A& a, T x) { a = (x < a || x != x) ? x : a; }
  static T finish(A a, int64_t) { return a; }
};
// log(sum(exp(x))) kept as (max, sum of exp(x - max)) so large inputs do not overflow.
template <typename T>
struct LogSumExpR {
  struct A { double m = -INFINITY, s = 0; };
  static A init() { return {}; }
  static void add(A& a, T x) {
    double v = double(x);
    if (v == -INFINITY) return;  // adds exp(-inf) = 0
    if (v > a.m) {
      a.s = a.s * std::exp(a.m - v) + 1;
      a.m = v;
    } else {
      a.s += std::exp(v - a.m);
    }
  }
  static T finish(A a, int64_t) { return T(a.s == 0 ? -INFINITY : a.m + std::log(a.s)); }
};

template <template <typename> class R, typename T>
void reduce_typed(KernelContext& ctx, const Tensor& x, const ReducePlan& p, Tensor& y) {
  using Red = R<T>;
  using A = typename Red::A;
  const T* in = x.data<T>();
  T* out = y.data<T>();
  const int64_t n = p.count;
  if (p.blocked) {
    // Accumulate whole rows of `inner` elements: unit stride in the hot loop.
    parallel_for(ctx, p.outer, 1 + (1 << 16) / std::max<int64_t>(1, n * p.inner), [&](int64_t o) {
      std::vector<A> acc(size_t(p.inner), Red::init());
      const T* src = in + o * n * p.inner;
      for (int64_t r = 0; r < n; ++r)
        for (int64_t i = 0; i < p.inner; ++i) Red::add(acc[size_t(i)], src[r * p.inner + i]);
      for (int64_t i = 0; i < p.inner; ++i) out[o * p.inner + i] = Red::finish(acc[size_t(i)], n);
    });
    return;
  }
  parallel_for(ctx, p.groups, 1 + (1 << 16) / std::max<int64_t>(1, n), [&](int64_t g) {
    A a = Red::init();
    if (p.contiguous) {
      const T* src = in + g * n;
      for (int64_t j = 0; j < n; ++j) Red::add(a, src[j]);
    } else {
      const T* src = in + p.base(g);
      for (int64_t j = 0; j < n; ++j) Red::add(a, src[p.off[size_t(j)]]);
    }
    out[g] = Red::finish(a, n);
  });
}

template <template <typename> class R>
void run_reduce(KernelContext& ctx, int axes_input_from) {
  const Tensor& x = ctx.input(0);
  bool noop = false;
  std::vector<int64_t> axes = reduce_axes(ctx, axes_input_from, &noop);
  if (noop) return ctx.set_output(0, x);
  int rank = x.rank();
  std::vector<bool> mask = axes.empty() ? std::vector<bool>(size_t(rank), true) : axes_mask(ctx, axes, rank);
  if (x.dtype() == DType::Bool) ctx.fail("bool input is not supported");
  ReducePlan p = make_reduce_plan(x.shape(), mask);
  bool keep = ctx.node.attr_i("keepdims", 1) != 0;
  Tensor& y = ctx.output(0, x.dtype(), keep ? p.out_keep : p.out_drop);
  dispatch_numeric(x.dtype(), ctx.node.where().c_str(), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if constexpr (!std::is_same_v<T, bool>) reduce_typed<R, T>(ctx, x, p, y);
  });
}

void run_sum(KernelContext& ctx) { run_reduce<SumR>(ctx, 13); }
void run_mean(KernelContext& ctx) { run_reduce<MeanR>(ctx, 18); }
void run_max(KernelContext& ctx) { run_reduce<MaxR>(ctx, 18); }
void run_min(KernelContext& ctx) { run_reduce<MinR>(ctx, 18); }
void run_prod(KernelContext& ctx) { run_reduce<ProdR>(ctx, 18); }
void run_l1(KernelContext& ctx) { run_reduce<L1R>(ctx, 18); }
void run_l2(KernelContext& ctx) { run_reduce<L2R>(ctx, 18); }
void run_log_sum(KernelContext& ctx) { run_reduce<LogSumR>(ctx, 18); }
void run_log_sum_exp(KernelContext& ctx) { run_reduce<LogSumExpR>(ctx, 18); }
void run_sum_square(KernelContext& ctx) { run_reduce<SumSquareR>(ctx, 18); }

}  // namespace

KESTREL_OP(ReduceSum, {.run = run_sum});
KESTREL_OP(ReduceMean, {.run = run_mean});
KESTREL_OP(ReduceMax, {.run = run_max});
KESTREL_OP(ReduceMin, {.run = run_min});
KESTREL_OP(ReduceProd, {.run = run_prod});
KESTREL_OP(ReduceL1, {.run = run_l1});
KESTREL_OP(ReduceL2, {.run = run_l2});
KESTREL_OP(ReduceLogSum, {.run = run_log_sum});
KESTREL_OP(ReduceLogSumExp, {.run = run_log_sum_exp});
KESTREL_OP(ReduceSumSquare, {.run = run_sum_square});

}  // namespace kestrel::ops

// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12/13).
// Both pick, per sample position, minus the (log-)probability of its target
// class, times the class weight; targets equal to ignore_index count with
// weight 0. "mean" divides the sum by the total weight of counted targets.
#include <cmath>
#include <limits>
#include <optional>

#include "ops/common.h"

namespace kestrel::ops {
namespace {

// The input seen as [N, C, D] with D the product of the trailing dims; the
// target is [N, D].
struct LossShape {
  int64_t N = 1, C = 1, D = 1;
};

LossShape loss_shape(const KernelContext& ctx, const Tensor& x, const Tensor& target) {
  if (x.rank() < 2) ctx.fail("input must be [N, C, d1, ...], got ", shape_str(x.shape()));
  Shape want(x.shape());
  want.erase(want.begin() + 1);
  if (target.shape() != want)
    ctx.fail("target ", shape_str(target.shape()), " must be ", shape_str(want), " for input ", shape_str(x.shape()));
  if (dtype_is_float(target.dtype())) ctx.fail("target must be an integer tensor, got ", dtype_name(target.dtype()));
  LossShape s;
  s.N = x.dim(0);
  s.C = x.dim(1);
  for (int i = 2; i < x.rank(); ++i) s.D *= x.dim(i);
  return s;
}

// Loss of log-probabilities lp ([N, C, D]) against `target`: writes output 0.
template <typename T>
void nll(KernelContext& ctx, const LossShape& s, const T* lp, const Tensor& target, const Tensor* weight) {
  const std::string reduction = ctx.node.attr_s("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    ctx.fail("reduction '", reduction, "' is not none, sum or mean");
  std::optional<int64_t> ignore;
  if (ctx.node.has("ignore_index")) ignore = ctx.node.attr_i("ignore_index", 0);
  std::vector<int64_t> t = target.to_i64();
  std::vector<float> w;
  if (weight) {
    if (weight->rank() != 1 || weight->dim(0) != s.C)
      ctx.fail("weight ", shape_str(weight->shape()), " must hold one value per class (", s.C, ")");
    w = weight->to_f32();
  }
  std::vector<double> loss(t.size(), 0.0);
  double total = 0, wsum = 0;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t d = 0; d < s.D; ++d) {
      size_t k = size_t(n * s.D + d);
      int64_t c = t[k];
      if (ignore && c == *ignore) continue;
      if (c < 0 || c >= s.C) ctx.fail("target ", c, " at position ", k, " is outside [0, ", s.C, ")");
      double wc = weight ? double(w[size_t(c)]) : 1.0;
      loss[k] = -double(lp[(n * s.C + c) * s.D + d]) * wc;
      total += loss[k];
      wsum += wc;
    }
  if (reduction == "none") {
    Tensor& y = ctx.output(0, DTypeOf<T>::value, target.shape());
    for (size_t k = 0; k < loss.size(); ++k) y.data<T>()[k] = T(loss[k]);
    return;
  }
  Tensor& y = ctx.output(0, DTypeOf<T>::value, {});
  // A mean over no counted targets is 0/0, as in ONNX's reference.
  *y.data<T>() = T(reduction == "sum" ? total : total / wsum);
}

const Tensor* optional_weight(const KernelContext& ctx) {
  return ctx.has_input(2) ? &ctx.input(2) : nullptr;
}

void run_nll(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& target = ctx.input(1);
  LossShape s = loss_shape(ctx, x, target);
  if (x.dtype() == DType::Float32) return nll<float>(ctx, s, x.data<float>(), target, optional_weight(ctx));
  if (x.dtype() == DType::Float64) return nll<double>(ctx, s, x.data<double>(), target, optional_weight(ctx));
  ctx.fail("supports float and double only, got ", dtype_name(x.dtype()));
}

template <typename T>
void sce(KernelContext& ctx, const LossShape& s, const Tensor& x, const Tensor& target) {
  // log_softmax over the class axis, kept as output 1 when the node has it.
  Tensor local;
  Tensor& lp = ctx.num_outputs() > 1 ? ctx.output(1, x.dtype(), x.shape()) : (local = Tensor(x.dtype(), x.shape()));
  const T* in = x.data<T>();
  T* out = lp.data<T>();
  parallel_for(ctx, s.N * s.D, 64, [&](int64_t p) {
    int64_t n = p / s.D, d = p % s.D;
    const T* xs = in + n * s.C * s.D + d;
    T* ys = out + n * s.C * s.D + d;
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < s.C; ++c) m = std::max(m, double(xs[c * s.D]));
    if (!std::isfinite(m)) m = std::isnan(m) ? m : 0.0;
    double sum = 0;
    for (int64_t c = 0; c < s.C; ++c) sum += std::exp(double(xs[c * s.D]) - m);
    double ls = std::log(sum);
    for (int64_t c = 0; c < s.C; ++c) ys[c * s.D] = T(double(xs[c * s.D]) - m - ls);
  });
  nll<T>(ctx, s, out, target, optional_weight(ctx));
}

void run_sce(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& target = ctx.input(1);
  LossShape s = loss_shape(ctx, x, target);
  if (x.dtype() == DType::Float32) return sce<float>(ctx, s, x, target);
  if (x.dtype() == DType::Float64) return sce<double>(ctx, s, x, target);
  ctx.fail("supports float and double only, got ", dtype_name(x.dtype()));
}

}  // namespace

KESTREL_OP(NegativeLogLikelihoodLoss, {.min_opset = 12, .run = run_nll});
KESTREL_OP(SoftmaxCrossEntropyLoss, {.min_opset = 12, .run = run_sce});

}  // namespace kestrel::ops

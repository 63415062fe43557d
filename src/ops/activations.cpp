// Activation functions: Sigmoid Relu Elu Selu Celu LeakyRelu ThresholdedRelu
// HardSigmoid HardSwish Softplus Softsign Mish Gelu Shrink PRelu.
// Comparisons are written so that NaN falls through to the NaN-producing side
// (Relu(NaN) = NaN), as IEEE arithmetic and ONNX Runtime give.
#include "ops/elementwise.h"
#include "ops/logistic.h"

namespace kestrel::ops {
namespace {

using namespace ew;

// Runs f(x) over float/double input 0.
template <typename F>
void float_act(KernelContext& ctx, F f) {
  Floats::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    unary<T, T>(ctx, [&](T x) { return T(f(x)); });
  });
}

template <typename T>
T softplus(T x) {
  // log(1 + e^x) without overflow for large x.
  T ax = x < T(0) ? -x : x;
  return (x > T(0) ? x : T(0)) + std::log1p(fast_exp(-ax));
}

void run_sigmoid(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() == DType::Float32) {  // ONNX Runtime's arithmetic (ops/logistic.h)
    Tensor& y = ctx.output(0, DType::Float32, x.shape());
    const float* in = x.data<float>();
    float* out = y.data<float>();
    const int64_t n = x.numel(), block = 1 << 14;
    parallel_for(ctx, (n + block - 1) / block, 1,
                 [&](int64_t b) { logistic(in + b * block, out + b * block, std::min(block, n - b * block)); });
    return;
  }
  float_act(ctx, [](auto x) { return sigmoid(x); });
}

void run_relu(KernelContext& ctx) {
  Signed::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    unary<T, T>(ctx, [](T x) { return x < T(0) ? T(0) : x; });
  });
}

void run_elu(KernelContext& ctx) {
  float alpha = ctx.node.attr_f("alpha", 1.0f);
  float_act(ctx, [=](auto x) {
    using T = decltype(x);
    return x < T(0) ? T(alpha) * (fast_exp(x) - T(1)) : x;
  });
}

void run_selu(KernelContext& ctx) {
  float alpha = ctx.node.attr_f("alpha", 1.67326319217681884765625f);
  float gamma = ctx.node.attr_f("gamma", 1.05070102214813232421875f);
  float_act(ctx, [=](auto x) {
    using T = decltype(x);
    return T(gamma) * (x <= T(0) ? T(alpha) * (fast_exp(x) - T(1)) : x);
  });
}

void run_celu(KernelContext& ctx) {
  float alpha = ctx.node.attr_f("alpha", 1.0f);
  if (alpha == 0) ctx.fail("alpha must be nonzero");
  float_act(ctx, [=](auto x) {
    using T = decltype(x);
    T neg = T(alpha) * (fast_exp(x / T(alpha)) - T(1));
    return x < T(0) ? neg : x;
  });
}

void run_leaky_relu(KernelContext& ctx) {
  float alpha = ctx.node.attr_f("alpha", 0.01f);
  float_act(ctx, [=](auto x) {
    using T = decltype(x);
    return x < T(0) ? T(alpha) * x : x;
  });
}

void run_thresholded_relu(KernelContext& ctx) {
  float alpha = ctx.node.attr_f("alpha", 1.0f);
  float_act(ctx, [=](auto x) {
    using T = decltype(x);
    return x <= T(alpha) ? T(0) : x;
  });
}

void run_hard_sigmoid(KernelContext& ctx) {
  float alpha = ctx.node.attr_f("alpha", 0.2f), beta = ctx.node.attr_f("beta", 0.5f);
  float_act(ctx, [=](auto x) {
    using T = decltype(x);
    T v = T(alpha) * x + T(beta);
    v = v < T(0) ? T(0) : v;
    return v > T(1) ? T(1) : v;
  });
}

void run_hard_swish(KernelContext& ctx) {
  float_act(ctx, [](auto x) {
    using T = decltype(x);
    T v = x * T(1.0 / 6) + T(0.5);
    v = v < T(0) ? T(0) : v;
    return x * (v > T(1) ? T(1) : v);
  });
}

void run_softplus(KernelContext& ctx) {
  float_act(ctx, [](auto x) { return softplus(x); });
}

void run_softsign(KernelContext& ctx) {
  float_act(ctx, [](auto x) {
    using T = decltype(x);
    return x / (T(1) + std::fabs(x));
  });
}

void run_mish(KernelContext& ctx) {
  float_act(ctx, [](auto x) { return x * fast_tanh(softplus(x)); });
}

void run_gelu(KernelContext& ctx) {
  std::string approx = ctx.node.attr_s("approximate", "none");
  if (approx == "none") {
    float_act(ctx, [](auto x) {
      using T = decltype(x);
      return T(0.5) * x * (T(1) + fast_erf(x * T(0.70710678118654752440)));
    });
  } else if (approx == "tanh") {
    float_act(ctx, [](auto x) {
      using T = decltype(x);
      return T(0.5) * x * (T(1) + fast_tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
    });
  } else {
    ctx.fail("approximate='", approx, "' is not one of none, tanh");
  }
}

void run_shrink(KernelContext& ctx) {
  float bias = ctx.node.attr_f("bias", 0.0f), lambd = ctx.node.attr_f("lambd", 0.5f);
  Numeric::dispatch(ctx, ctx.input(0).dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    // Compared and offset in float/double so integer inputs follow the float attributes.
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    unary<T, T>(ctx, [=](T x) {
      C v = C(x);
      return v < C(-lambd) ? T(v + C(bias)) : (v > C(lambd) ? T(v - C(bias)) : T(0));
    });
  });
}

void run_prelu(KernelContext& ctx) {
  require_same_types(ctx, 0, 2);
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  auto p = plan_broadcast<2>(ctx, {&x.shape(), &slope.shape()});
  if (p.out != x.shape())
    ctx.fail("slope of shape ", shape_str(slope.shape()), " must broadcast to X of shape ", shape_str(x.shape()));
  Join<Floats, Types<int32_t, int64_t, uint32_t, uint64_t>>::dispatch(ctx, x.dtype(), "input", [&](auto* tag) {
    KESTREL_EW_TYPE(tag);
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    binary_loop(ctx, p, x.data<T>(), slope.data<T>(), y.data<T>(), [](T v, T s) { return v < T(0) ? v * s : v; });
  });
}

}  // namespace

KESTREL_OP(Sigmoid, {.run = run_sigmoid});
KESTREL_OP(Relu, {.run = run_relu});
KESTREL_OP(Elu, {.run = run_elu});
KESTREL_OP(Selu, {.run = run_selu});
KESTREL_OP(Celu, {.min_opset = 12, .run = run_celu});
KESTREL_OP(LeakyRelu, {.run = run_leaky_relu});
KESTREL_OP(ThresholdedRelu, {.min_opset = 10, .run = run_thresholded_relu});
KESTREL_OP(HardSigmoid, {.run = run_hard_sigmoid});
KESTREL_OP(HardSwish, {.min_opset = 14, .run = run_hard_swish});
KESTREL_OP(Softplus, {.run = run_softplus});
KESTREL_OP(Softsign, {.run = run_softsign});
KESTREL_OP(Mish, {.min_opset = 18, .run = run_mish});
KESTREL_OP(Gelu, {.min_opset = 20, .run = run_gelu});
KESTREL_OP(Shrink, {.min_opset = 9, .run = run_shrink});
KESTREL_OP(PRelu, {.min_opset = 7, .run = run_prelu});

}  // namespace kestrel::ops

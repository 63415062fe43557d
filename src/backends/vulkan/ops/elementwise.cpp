// Unary and binary element-wise ops (shaders/unary.comp, shaders/binary.comp).
#include <cmath>
#include <limits>

#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {
namespace {

struct UnaryPush {
  uint32_t base, n;
  float a, b;
};

void record_unary(OpContext& ctx, UnaryFn act, float a, float b) {
  require_float(ctx, {0});
  const GpuTensor& x = ctx.input(0);
  GpuTensor& y = ctx.output(0, x.dtype, x.shape);
  UnaryPush p{0, 0, a, b};
  ctx.dispatch_elements("unary", {int32_t(act)}, {In(x), Out(y)}, &p, sizeof p, uint64_t(x.numel()));
}

template <UnaryFn A>
void unary(OpContext& ctx) { record_unary(ctx, A, 0, 0); }

void leaky_relu(OpContext& ctx) { record_unary(ctx, UnaryFn::LeakyRelu, ctx.node.attr_f("alpha", 0.01f), 0); }
void elu(OpContext& ctx) { record_unary(ctx, UnaryFn::Elu, ctx.node.attr_f("alpha", 1.0f), 0); }
void celu(OpContext& ctx) { record_unary(ctx, UnaryFn::Celu, ctx.node.attr_f("alpha", 1.0f), 0); }
void selu(OpContext& ctx) {
  record_unary(ctx, UnaryFn::Selu, ctx.node.attr_f("alpha", 1.67326319217681884765625f),
               ctx.node.attr_f("gamma", 1.05070102214813232421875f));
}
void hard_sigmoid(OpContext& ctx) {
  record_unary(ctx, UnaryFn::HardSigmoid, ctx.node.attr_f("alpha", 0.2f), ctx.node.attr_f("beta", 0.5f));
}
void thresholded_relu(OpContext& ctx) { record_unary(ctx, UnaryFn::ThresholdedRelu, ctx.node.attr_f("alpha", 1.0f), 0); }
void gelu(OpContext& ctx) {
  std::string approx = ctx.node.attr_s("approximate", "none");
  if (approx != "none" && approx != "tanh") ctx.fail("approximate must be 'none' or 'tanh', got '", approx, "'");
  record_unary(ctx, approx == "tanh" ? UnaryFn::GeluTanh : UnaryFn::Gelu, 0, 0);
}

float scalar_of(const OpContext& ctx, int i, float def) {
  if (!ctx.has_input(i)) return def;
  const Tensor& t = ctx.host_input(i);
  if (t.numel() != 1) ctx.fail("input ", i, " must be a scalar, got shape ", shape_str(t.shape()));
  return t.to_f32()[0];
}

void clip(OpContext& ctx) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (ctx.node.opset < 11) {
    lo = ctx.node.attr_f("min", lo);
    hi = ctx.node.attr_f("max", hi);
  } else {
    lo = scalar_of(ctx, 1, lo);
    hi = scalar_of(ctx, 2, hi);
  }
  record_unary(ctx, UnaryFn::Clip, lo, hi);
}

void identity(OpContext& ctx) { ctx.set_output(0, ctx.input(0)); }

// c = a OP b with broadcasting.
void record_binary_of(OpContext& ctx, int op, const GpuTensor& a, const GpuTensor& b, GpuTensor& out) {
  BroadcastPush p = broadcast_push(a.shape, b.shape, out.shape);
  bool same = a.shape == out.shape && b.shape == out.shape;
  ctx.dispatch_elements("binary", {op, same ? 0 : 1}, {In(a), In(b), Out(out)}, &p, sizeof p, uint64_t(out.numel()));
}

void record_binary(OpContext& ctx, int op) {
  require_float(ctx, {0, 1});
  const GpuTensor& a = ctx.input(0);
  const GpuTensor& b = ctx.input(1);
  Shape out = broadcast_pair(ctx, a.shape, b.shape);
  require_rank(ctx, out);
  if (a.dtype != b.dtype) ctx.fail("inputs have different types: ", dtype_name(a.dtype), " and ", dtype_name(b.dtype));
  record_binary_of(ctx, op, a, b, ctx.output(0, a.dtype, out));
}

template <int OP>
void binary(OpContext& ctx) { record_binary(ctx, OP); }

void mod(OpContext& ctx) { record_binary(ctx, ctx.node.attr_i("fmod", 0) ? 8 : 9); }

void prelu(OpContext& ctx) {
  require_float(ctx, {0, 1});
  const GpuTensor& x = ctx.input(0);
  const GpuTensor& slope = ctx.input(1);
  // The slope broadcasts to x (unidirectionally); older exporters give it as
  // [C] or [C,1,1] for NCHW inputs, which NumPy rules already cover.
  Shape out = broadcast_pair(ctx, x.shape, slope.shape);
  if (out != x.shape) ctx.fail("slope ", shape_str(slope.shape), " does not broadcast to X ", shape_str(x.shape));
  require_rank(ctx, out);
  record_binary_of(ctx, 7, x, slope, ctx.output(0, x.dtype, out));
}

// Max, Min, Sum over 1..N inputs, folded pairwise.
template <int OP>
void variadic(OpContext& ctx) {
  int n = ctx.num_inputs();
  for (int i = 0; i < n; ++i) require_float(ctx, {i});
  Shape out = ctx.input(0).shape;
  for (int i = 1; i < n; ++i) out = broadcast_pair(ctx, out, ctx.input(i).shape);
  require_rank(ctx, out);
  if (n == 1) {
    ctx.set_output(0, ctx.input(0));
    return;
  }
  GpuTensor* acc = &ctx.output(0, ctx.input(0).dtype, out);
  record_binary_of(ctx, OP, ctx.input(0), ctx.input(1), *acc);
  // The accumulator is read and rewritten in place: element i only reads element i.
  for (int i = 2; i < n; ++i) record_binary_of(ctx, OP, *acc, ctx.input(i), *acc);
}

}  // namespace

KESTREL_VK_OP(Relu, {.record = unary<UnaryFn::Relu>});
KESTREL_VK_OP(Sigmoid, {.record = unary<UnaryFn::Sigmoid>});
KESTREL_VK_OP(Tanh, {.record = unary<UnaryFn::Tanh>});
KESTREL_VK_OP(Exp, {.record = unary<UnaryFn::Exp>});
KESTREL_VK_OP(Log, {.record = unary<UnaryFn::Log>});
KESTREL_VK_OP(Sqrt, {.record = unary<UnaryFn::Sqrt>});
KESTREL_VK_OP(Abs, {.record = unary<UnaryFn::Abs>});
KESTREL_VK_OP(Neg, {.record = unary<UnaryFn::Neg>});
KESTREL_VK_OP(Reciprocal, {.record = unary<UnaryFn::Reciprocal>});
KESTREL_VK_OP(Floor, {.record = unary<UnaryFn::Floor>});
KESTREL_VK_OP(Ceil, {.record = unary<UnaryFn::Ceil>});
KESTREL_VK_OP(Round, {.record = unary<UnaryFn::Round>});
KESTREL_VK_OP(Erf, {.record = unary<UnaryFn::Erf>});
KESTREL_VK_OP(Sin, {.record = unary<UnaryFn::Sin>});
KESTREL_VK_OP(Cos, {.record = unary<UnaryFn::Cos>});
KESTREL_VK_OP(Tan, {.record = unary<UnaryFn::Tan>});
KESTREL_VK_OP(Asin, {.record = unary<UnaryFn::Asin>});
KESTREL_VK_OP(Acos, {.record = unary<UnaryFn::Acos>});
KESTREL_VK_OP(Atan, {.record = unary<UnaryFn::Atan>});
KESTREL_VK_OP(Sign, {.record = unary<UnaryFn::Sign>});
KESTREL_VK_OP(HardSwish, {.record = unary<UnaryFn::HardSwish>});
KESTREL_VK_OP(Softplus, {.record = unary<UnaryFn::Softplus>});
KESTREL_VK_OP(Softsign, {.record = unary<UnaryFn::Softsign>});
KESTREL_VK_OP(Mish, {.record = unary<UnaryFn::Mish>});
KESTREL_VK_OP(LeakyRelu, {.record = leaky_relu});
KESTREL_VK_OP(Elu, {.record = elu});
KESTREL_VK_OP(Celu, {.record = celu});
KESTREL_VK_OP(Selu, {.record = selu});
KESTREL_VK_OP(HardSigmoid, {.record = hard_sigmoid});
KESTREL_VK_OP(ThresholdedRelu, {.record = thresholded_relu});
KESTREL_VK_OP(Gelu, {.record = gelu});
KESTREL_VK_OP(Clip, {.record = clip, .host_inputs = {1, 2}});
KESTREL_VK_OP(Identity, {.record = identity});
KESTREL_VK_OP(Add, {.record = binary<0>});
KESTREL_VK_OP(Sub, {.record = binary<1>});
KESTREL_VK_OP(Mul, {.record = binary<2>});
KESTREL_VK_OP(Div, {.record = binary<3>});
KESTREL_VK_OP(Pow, {.record = binary<4>});
KESTREL_VK_OP(Mod, {.record = mod});
KESTREL_VK_OP(PRelu, {.record = prelu});
KESTREL_VK_OP(Max, {.record = variadic<5>});
KESTREL_VK_OP(Min, {.record = variadic<6>});
KESTREL_VK_OP(Sum, {.record = variadic<0>});

}  // namespace kestrel::vulkan

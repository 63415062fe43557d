// Activations (shaders/unary.comp; PRelu on shaders/binary.comp); semantics of
// src/ops/activations.cpp.
#include <string>

#include "backends/vulkan/ops/elementwise.h"

namespace kestrel::vulkan {
namespace {

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

}  // namespace

KESTREL_VK_OP(Relu, {.record = unary<UnaryFn::Relu>});
KESTREL_VK_OP(Sigmoid, {.record = unary<UnaryFn::Sigmoid>});
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
KESTREL_VK_OP(PRelu, {.record = prelu});

}  // namespace kestrel::vulkan

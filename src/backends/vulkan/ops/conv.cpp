// Conv (1-D and 2-D, float): depthwise convolutions run a direct kernel
// (shaders/conv_depthwise.comp), everything else an implicit GEMM with
// shared-memory tiles (shaders/conv_gemm.comp), split into bounded dispatches.
#include <algorithm>

#include "backends/vulkan/ops/conv_common.h"

namespace kestrel::vulkan {
namespace {

struct GemmPush {
  Window2DPush win;
  int32_t C, Cg, Mg, K, groups, tile0;
  float a, b;
};

struct DepthwisePush {
  uint32_t base, n;
  Window2DPush win;
  int32_t C, M, Mg;
  float a, b;
};

void record_conv(OpContext& ctx) {
  require_float(ctx, {0, 1, 2});
  const GpuTensor& X = ctx.input(0);
  const GpuTensor& Wt = ctx.input(1);
  const ConvSetup s = conv_setup(ctx, X.shape, Wt.shape);
  const bool has_bias = ctx.has_input(2);
  if (has_bias && ctx.input(2).numel() != s.M)
    ctx.fail("bias ", shape_str(ctx.input(2).shape), " must hold one value per output channel (", s.M, ")");
  require_int32_sizes(ctx, {X.numel(), Wt.numel(), shape_numel(s.out)});
  GpuTensor& Y = ctx.output(0, X.dtype, s.out);
  if (Y.numel() == 0) return;

  const ActParams act = fused_activation(ctx.node);
  const Window2DPush win = window_push(s.g);
  const GpuTensor& bias = has_bias ? ctx.input(2) : Wt;  // bound but unread without a bias

  if (s.Cg == 1 && s.group > 1) {
    DepthwisePush p{0, 0, win, int32_t(s.C), int32_t(s.M), int32_t(s.Mg), act.a, act.b};
    ctx.dispatch_elements("conv_depthwise", {s.kh, s.kw, int32_t(act.act), has_bias},
                          {In(X), In(Wt), In(bias), Out(Y)}, &p, sizeof p, uint64_t(Y.numel()));
    return;
  }

  GemmPush p{win, int32_t(s.C), int32_t(s.Cg), int32_t(s.Mg), int32_t(s.Cg * s.g.kernel_size()),
             int32_t(s.group), 0, act.a, act.b};
  record_conv_tiles(ctx, s, "conv_gemm", {int32_t(act.act), has_bias}, {In(X), In(Wt), In(bias), Out(Y)}, &p,
                    sizeof p, &p.tile0);
}

}  // namespace

KESTREL_VK_OP(Conv, {.record = record_conv});

}  // namespace kestrel::vulkan

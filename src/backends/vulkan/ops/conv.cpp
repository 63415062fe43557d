// Conv (1-D and 2-D, float): depthwise convolutions run a direct kernel
// (shaders/conv_depthwise.comp), everything else an implicit GEMM with
// shared-memory tiles (shaders/conv_gemm.comp), split into bounded dispatches.
#include <algorithm>

#include "backends/vulkan/ops/window.h"

namespace kestrel::vulkan {
namespace {

// Multiply-adds per dispatch: ~2^31 is ~10 ms on a mid-range phone GPU,
// far below the ~500 ms after which mobile drivers kill a dispatch.
constexpr int64_t kMacsPerDispatch = int64_t(1) << 31;

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

// Threads own TM channels x TN pixels: smaller tiles for few output channels
// per group or few pixels, so small layers do not compute mostly padding.
int rows_per_thread(int64_t Mg) { return Mg > 32 ? 4 : Mg > 16 ? 2 : 1; }
int cols_per_thread(int64_t P) { return P > 32 ? 4 : P > 16 ? 2 : 1; }

void record_conv(OpContext& ctx) {
  require_float(ctx, {0, 1, 2});
  const GpuTensor& X = ctx.input(0);
  const GpuTensor& Wt = ctx.input(1);
  if (X.shape.size() < 3) ctx.fail("input must be N x C x spatial..., got ", shape_str(X.shape));
  if (Wt.shape.size() != X.shape.size())
    ctx.fail("weight ", shape_str(Wt.shape), " and input ", shape_str(X.shape), " must have the same rank");
  if (X.shape.size() > 4) ctx.unsupported(X.shape.size() - 2, "-D convolution runs on the CPU");
  const int64_t N = X.shape[0], C = X.shape[1], M = Wt.shape[0], group = ctx.node.attr_i("group", 1);
  if (group < 1 || C % group || M % group)
    ctx.fail("group ", group, " must divide input channels ", C, " and output channels ", M);
  const int64_t Cg = C / group, Mg = M / group;
  if (Wt.shape[1] != Cg)
    ctx.fail("weight ", shape_str(Wt.shape), " expects ", Wt.shape[1] * group, " input channels (group ", group,
             ") but input ", shape_str(X.shape), " has ", C);
  std::vector<int64_t> kernel = ops::spatial_dims(Wt.shape);
  if (ctx.node.has("kernel_shape") && ctx.node.attr_ints("kernel_shape") != kernel)
    ctx.fail("kernel_shape attribute ", shape_str(ctx.node.attr_ints("kernel_shape")), " disagrees with weight ",
             shape_str(Wt.shape));
  const bool has_bias = ctx.has_input(2);
  if (has_bias && ctx.input(2).numel() != M)
    ctx.fail("bias ", shape_str(ctx.input(2).shape), " must hold one value per output channel (", M, ")");
  ops::WindowGeom g = window_of(ctx, X.shape, kernel, false);
  Shape out{N, M};
  out.insert(out.end(), g.out.begin(), g.out.end());
  require_int32_sizes(ctx, {X.numel(), Wt.numel(), shape_numel(out)});
  GpuTensor& Y = ctx.output(0, X.dtype, out);
  if (Y.numel() == 0) return;

  const ActParams act = fused_activation(ctx.node);
  const Window2DPush win = window_push(g);
  const int32_t kh = g.nd == 2 ? int32_t(g.kernel[0]) : 1;  // 1-D runs as H = 1
  const int32_t kw = int32_t(g.kernel.back());
  const GpuTensor& bias = has_bias ? ctx.input(2) : Wt;  // bound but unread without a bias

  if (Cg == 1 && group > 1) {
    DepthwisePush p{0, 0, win, int32_t(C), int32_t(M), int32_t(Mg), act.a, act.b};
    ctx.dispatch_elements("conv_depthwise", {kh, kw, int32_t(act.act), has_bias},
                          {In(X), In(Wt), In(bias), Out(Y)}, &p, sizeof p, uint64_t(Y.numel()));
    return;
  }

  const int64_t P = g.out_size(), K = Cg * g.kernel_size();
  const int tm = rows_per_thread(Mg), tn = cols_per_thread(P);
  const int64_t bm = 16 * tm, bn = 16 * tn;
  const int64_t m_tiles = (Mg + bm - 1) / bm, p_tiles = (P + bn - 1) / bn, zs = N * group;
  if (m_tiles > 65535 || zs > 65535) ctx.unsupported("convolution grid ", m_tiles, " x ", zs, " is past 65535");
  // Split along pixel tiles so each dispatch stays within the budget.
  const int64_t macs_per_tile = bn * Mg * K * zs;
  const int64_t tiles_per = std::clamp<int64_t>(kMacsPerDispatch / std::max<int64_t>(macs_per_tile, 1), 1, 65535);
  GemmPush p{win, int32_t(C), int32_t(Cg), int32_t(Mg), int32_t(K), int32_t(group), 0, act.a, act.b};
  for (int64_t t0 = 0; t0 < p_tiles; t0 += tiles_per) {
    p.tile0 = int32_t(t0);
    ctx.dispatch("conv_gemm", {tm, tn, kh, kw, int32_t(act.act), has_bias}, {In(X), In(Wt), In(bias), Out(Y)}, &p,
                 sizeof p, uint32_t(std::min(tiles_per, p_tiles - t0)), uint32_t(m_tiles), uint32_t(zs));
  }
}

}  // namespace

KESTREL_VK_OP(Conv, {.record = record_conv});

}  // namespace kestrel::vulkan

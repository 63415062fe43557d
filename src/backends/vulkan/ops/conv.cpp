// Conv (1-D and 2-D, float), ConvInteger and QLinearConv, as src/ops/conv.cpp
// has them.
// Conv: depthwise convolutions run a direct kernel (shaders/conv_depthwise.comp),
// everything else an implicit GEMM with shared-memory tiles, on tensor cores
// in float16 runs where the device has them (shaders/conv_coop.comp), else
// on plain arithmetic (shaders/conv_gemm.comp); split into bounded dispatches.
#include <algorithm>

#include "backends/vulkan/ops/conv_common.h"
#include "backends/vulkan/ops/requantize.h"

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
  if (ctx.half() && ctx.device().coop_matrix_fp16) {
    // Float16 on tensor cores: 64x64 tiles; the weights' rows load 16 bytes
    // at a time where each starts 16-byte aligned.
    const bool w_vec = p.K % 8 == 0 && Wt.range(false).offset % 16 == 0;
    dispatch_conv_tiles(ctx, s, 64, 64, "conv_coop", {s.kh, s.kw, int32_t(act.act), has_bias, w_vec},
                        {In(X), In(Wt), In(bias), Out(Y)}, &p, sizeof p, &p.tile0);
    return;
  }
  record_conv_tiles(ctx, s, "conv_gemm", {int32_t(act.act), has_bias}, {In(X), In(Wt), In(bias), Out(Y)}, &p,
                    sizeof p, &p.tile0);
}

// ConvInteger: uint8/int8 input and weights (packed four to a word), zero
// points subtracted, exact int32 sums (shaders/conv_integer.comp; depthwise:
// shaders/conv_integer_depthwise.comp). The input
// and its zero point usually come from DynamicQuantizeLinear on the device;
// the weight zero point is read on the host (a weight). QLinearConv: those
// sums into scratch, then its bias added and requantized (requantize.h).
struct IntPush {
  Window2DPush win;
  int32_t C, Cg, Mg, K, groups, tile0, has_x_zero_point;
};

// ConvInteger's sums of X and Wt (their zero points at inputs x_zp_at, a
// device scalar, and w_zp_at, on the host) into Y's int32 words.
void record_conv_sums(OpContext& ctx, const ConvSetup& s, const GpuTensor& X, const GpuTensor& Wt, int x_zp_at,
                      int w_zp_at, const GpuTensor& Y) {
  const bool has_xzp = ctx.has_input(x_zp_at);
  if (has_xzp && (ctx.input(x_zp_at).numel() != 1 || ctx.input(x_zp_at).dtype != X.dtype))
    ctx.fail("x_zero_point must be one ", dtype_name(X.dtype), ", got ", dtype_name(ctx.input(x_zp_at).dtype), " ",
             shape_str(ctx.input(x_zp_at).shape));
  std::vector<int32_t> wzp = {0};
  if (ctx.has_input(w_zp_at)) {
    const Tensor& z = ctx.host_input(w_zp_at);
    if (z.dtype() != Wt.dtype || (z.numel() != 1 && z.numel() != s.M))
      ctx.fail("w_zero_point must be one ", dtype_name(Wt.dtype), " or one per output channel (", s.M, "), got ",
               dtype_name(z.dtype()), " ", shape_str(z.shape()));
    wzp.clear();
    for (int64_t v : z.to_i64()) wzp.push_back(int32_t(v));
  }
  GpuTensor wz = ctx.upload_i32(wzp);
  const GpuTensor& xz = has_xzp ? ctx.input(x_zp_at) : X;  // bound but unread without a zero point
  if (s.Cg == 1 && s.group > 1) {  // depthwise: a direct loop per output (conv_integer_depthwise.comp)
    struct {
      uint32_t base, n;
      Window2DPush win;
      int32_t C, M, Mg, has_x_zero_point;
    } p{0, 0, window_push(s.g), int32_t(s.C), int32_t(s.M), int32_t(s.Mg), has_xzp};
    ctx.dispatch_elements("conv_integer_depthwise",
                          {s.kh, s.kw, X.dtype == DType::Int8, Wt.dtype == DType::Int8, wzp.size() > 1},
                          {In(X), In(Wt), In(xz), In(wz), Out(Y)}, &p, sizeof p, uint64_t(Y.numel()));
    return;
  }
  IntPush p{window_push(s.g), int32_t(s.C), int32_t(s.Cg), int32_t(s.Mg), int32_t(s.Cg * s.g.kernel_size()),
            int32_t(s.group), 0, has_xzp};
  record_conv_tiles(ctx, s, "conv_integer",
                    {X.dtype == DType::Int8, Wt.dtype == DType::Int8, wzp.size() > 1},
                    {In(X), In(Wt), In(xz), In(wz), Out(Y)}, &p, sizeof p, &p.tile0);
}

void require_bytes(OpContext& ctx, const GpuTensor& X, const GpuTensor& Wt) {
  if (!X.is_byte() || !Wt.is_byte())
    ctx.unsupported(ctx.node.op_type, " of ", dtype_name(X.dtype), " and ", dtype_name(Wt.dtype), " (8-bit only)");
}

void record_conv_integer(OpContext& ctx) {
  const GpuTensor& X = ctx.input(0);
  const GpuTensor& Wt = ctx.input(1);
  require_bytes(ctx, X, Wt);
  const ConvSetup s = conv_setup(ctx, X.shape, Wt.shape);
  require_int32_sizes(ctx, {X.numel(), Wt.numel(), shape_numel(s.out)});
  GpuTensor& Y = ctx.output(0, DType::Int32, s.out);
  if (Y.numel() == 0) return;
  record_conv_sums(ctx, s, X, Wt, 2, 3, Y);
}

void record_qlinear_conv(OpContext& ctx) {
  const GpuTensor& X = ctx.input(0);
  const GpuTensor& Wt = ctx.input(3);
  require_bytes(ctx, X, Wt);
  // An activation the QDQ fusion folded in (passes/fuse_qdq_conv.cpp):
  // requantized through it, the multipliers the sums' real scales.
  const ActParams act = fused_activation(ctx.node);
  const ConvSetup s = conv_setup(ctx, X.shape, Wt.shape);
  require_int32_sizes(ctx, {X.numel(), Wt.numel(), shape_numel(s.out)});
  const float y_scale = host_scales(ctx, 6, 1, "y_scale")[0];
  ops::RequantMultipliers mult = ops::requant_multipliers(host_scales(ctx, 1, 1, "x_scale"),
                                                          host_scales(ctx, 4, s.M, "w_scale"),
                                                          act.act == UnaryFn::None ? y_scale : 1.0f, 1, s.M);
  const int64_t OS = s.g.out_size();
  if (mult.dim) mult.inner = OS;  // one multiplier per output channel: element i's is (i / OS) % M
  const GpuTensor* bias = ctx.has_input(8) ? &ctx.input(8) : nullptr;
  if (bias && (bias->dtype != DType::Int32 || bias->numel() != s.M))
    ctx.fail("bias ", dtype_name(bias->dtype), " ", shape_str(bias->shape), " must hold one int32 per output channel (",
             s.M, ")");
  DType y_type;
  const int32_t y_zero = output_zero_point(ctx, 7, y_type, X.dtype);
  GpuTensor& Y = ctx.output(0, y_type, s.out);
  if (Y.numel() == 0) return;
  const GpuTensor acc = ctx.temp_words(size_t(Y.numel()));
  record_conv_sums(ctx, s, X, Wt, 2, 5, acc);
  record_requantize(ctx, acc, mult, bias, OS, s.M, y_zero, Y, act, y_scale);
}

}  // namespace

KESTREL_VK_OP(Conv, {.record = record_conv});
KESTREL_VK_OP(ConvInteger, {.min_opset = 10, .record = record_conv_integer, .host_inputs = {3}});
KESTREL_VK_OP(QLinearConv,
              {.min_opset = 10, .record = record_qlinear_conv, .host_inputs = {1, 4, 5, 6, 7}, .float32_node = true});

}  // namespace kestrel::vulkan

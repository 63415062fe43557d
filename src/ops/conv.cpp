// Conv (1-D/2-D/3-D, grouped, depthwise, dilated), ConvInteger and
// QLinearConv: the reference kernels. Each image and group is gathered whole
// (im2col) and multiplied by the run's products; the CPU backend's fast Conv
// (backends/cpu/conv.cpp) chunks, runs depthwise layers directly and reads
// 1x1 inputs in place.
#include "ops/conv.h"

#include "ops/epilogue.h"
#include "ops/gemm_util.h"
#include "ops/quantize_linear.h"
#include "ops/requantize.h"

namespace kestrel::ops {

ConvShape conv_shape(const KernelContext& ctx, const Tensor& X, const Tensor& W) {
  if (X.rank() < 3) ctx.fail("input must be N x C x spatial..., got ", shape_str(X.shape()));
  if (W.rank() != X.rank())
    ctx.fail("weight ", shape_str(W.shape()), " and input ", shape_str(X.shape()), " must have the same rank");
  ConvShape s;
  s.N = X.dim(0);
  s.C = X.dim(1);
  s.M = W.dim(0);
  s.group = ctx.node.attr_i("group", 1);
  if (s.group < 1 || s.C % s.group || s.M % s.group)
    ctx.fail("group ", s.group, " must divide input channels ", s.C, " and output channels ", s.M);
  s.Cg = s.C / s.group;
  s.Mg = s.M / s.group;
  if (W.dim(1) != s.Cg)
    ctx.fail("weight ", shape_str(W.shape()), " expects ", W.dim(1) * s.group, " input channels (group ", s.group,
             ") but input ", shape_str(X.shape()), " has ", s.C);
  std::vector<int64_t> kernel = spatial_dims(W.shape());
  if (ctx.node.has("kernel_shape") && ctx.node.attr_ints("kernel_shape") != kernel)
    ctx.fail("kernel_shape attribute ", shape_str(ctx.node.attr_ints("kernel_shape")), " disagrees with weight ",
             shape_str(W.shape()));
  s.g = window_geom(ctx, spatial_dims(X.shape()), kernel, false);
  return s;
}

Shape conv_out_shape(const ConvShape& s) {
  Shape out{s.N, s.M};
  out.insert(out.end(), s.g.out.begin(), s.g.out.end());
  return out;
}

const float* conv_float_operands(const KernelContext& ctx, const ConvShape& s) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  if (X.dtype() != DType::Float32 || W.dtype() != DType::Float32)
    ctx.fail("supports float32 (and float16 via float32) only, got ", dtype_name(X.dtype()), " input and ",
             dtype_name(W.dtype()), " weight");
  if (!ctx.has_input(2)) return nullptr;
  const Tensor& B = ctx.input(2);
  if (B.dtype() != DType::Float32 || B.numel() != s.M)
    ctx.fail("bias ", shape_str(B.shape()), " must hold one float per output channel (", s.M, ")");
  return B.data<float>();
}

ConvInt32Operands conv_int32_operands(const KernelContext& ctx, const ConvShape& s, const Tensor& X, const Tensor& W,
                                      const Tensor* xzp, const Tensor* wzp) {
  if (xzp && xzp->numel() != 1) ctx.fail("x_zero_point must be a scalar, got ", shape_str(xzp->shape()));
  ConvInt32Operands o;
  o.x = widen_int8<float>(ctx, X, xzp, [](int64_t) { return 0; }, 1, "input");
  // A per-output-channel weight zero point covers one filter of Cg * kernel values.
  const int64_t filter = s.Cg * s.g.kernel_size();
  o.w = widen_int8(ctx, W, wzp, [&](int64_t i) { return i / filter; }, s.M, "weight");
  return o;
}

void conv_reference(const KernelContext& ctx, const Tensor& X, const float* residual, Tensor& Y) {
  ConvShape s = conv_shape(ctx, X, ctx.input(1));
  const float* bias = conv_float_operands(ctx, s);
  if (Y.numel() == 0) return;
  const WindowGeom& g = s.g;
  const int64_t IS = g.in_size(), OS = g.out_size(), K = s.Cg * g.kernel_size();
  const float* x = X.data<float>();
  const float* w = ctx.input(1).data<float>();
  float* y = Y.data<float>();
  const Epilogue epi = Epilogue::of(ctx.node);  // a fused activation, if any
  std::vector<float> col(size_t(K * OS));
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t gi = 0; gi < s.group; ++gi) {
      im2col(g, x + (n * s.C + gi * s.Cg) * IS, s.Cg, 0, OS, col.data());
      float* yg = y + (n * s.M + gi * s.Mg) * OS;
      sgemm(ctx, false, false, s.Mg, OS, K, 1.f, w + gi * s.Mg * K, K, col.data(), OS, 0.f, yg, OS);
      for (int64_t m = 0; m < s.Mg; ++m) {
        float* row = yg + m * OS;
        const float* r = residual ? residual + (yg - y) + m * OS : nullptr;
        for (int64_t j = 0; j < OS; ++j) {
          if (bias) row[j] += bias[gi * s.Mg + m];
          if (r) row[j] += r[j];
        }
        epi.apply(row, OS);
      }
    }
}

namespace {

void run_conv(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  ConvShape s = conv_shape(ctx, X, ctx.input(1));
  conv_float_operands(ctx, s);
  conv_reference(ctx, X, nullptr, ctx.output(0, DType::Float32, conv_out_shape(s)));
}

Tensor conv_int32(const KernelContext& ctx, const ConvShape& s, const Tensor& X, const Tensor& W, const Tensor* xzp,
                  const Tensor* wzp) {
  ConvInt32Operands o = conv_int32_operands(ctx, s, X, W, xzp, wzp);
  Tensor Y(DType::Int32, conv_out_shape(s));
  if (Y.numel() == 0) return Y;
  const WindowGeom& g = s.g;
  const int64_t IS = g.in_size(), OS = g.out_size(), K = s.Cg * g.kernel_size();
  std::vector<int32_t> x(o.x.begin(), o.x.end());  // whole numbers in [-255, 255]
  std::vector<int32_t> col(size_t(K * OS));
  int32_t* y = Y.data<int32_t>();
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t gi = 0; gi < s.group; ++gi) {
      im2col(g, x.data() + (n * s.C + gi * s.Cg) * IS, s.Cg, 0, OS, col.data());
      igemm(ctx, s.Mg, OS, K, o.w.data() + gi * s.Mg * K, col.data(), y + (n * s.M + gi * s.Mg) * OS);
    }
  return Y;
}

const Tensor* optional_input(const KernelContext& ctx, int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

void run_conv_integer(KernelContext& ctx) { run_conv_integer_with(ctx, conv_int32); }
void run_qlinear_conv(KernelContext& ctx) { run_qlinear_conv_with(ctx, conv_int32); }

}  // namespace

void run_conv_integer_with(KernelContext& ctx, ConvInt32 conv) {
  ConvShape s = conv_shape(ctx, ctx.input(0), ctx.input(1));
  ctx.set_output(0, conv(ctx, s, ctx.input(0), ctx.input(1), optional_input(ctx, 2), optional_input(ctx, 3)));
}

// QLinearConv: inputs x, x_scale, x_zero_point, w, w_scale, w_zero_point,
// y_scale, y_zero_point and an optional int32 bias B.
void run_qlinear_conv_with(KernelContext& ctx, ConvInt32 conv) {
  const Tensor& X = ctx.input(0);
  const Tensor& Wt = ctx.input(3);
  ConvShape s = conv_shape(ctx, X, Wt);
  std::vector<float> x_scale = read_scales(ctx, 1, 1, "x_scale");
  std::vector<float> w_scale = read_scales(ctx, 4, s.M, "w_scale");
  std::vector<float> y_scale = read_scales(ctx, 6, 1, "y_scale");
  Tensor acc = conv(ctx, s, X, Wt, optional_input(ctx, 2), optional_input(ctx, 5));
  const int64_t OS = s.g.out_size();
  if (const Tensor* B = optional_input(ctx, 8)) {
    if (B->dtype() != DType::Int32 || B->numel() != s.M)
      ctx.fail("bias ", dtype_name(B->dtype()), " ", shape_str(B->shape()), " must hold one int32 per output channel (",
               s.M, ")");
    const int32_t* b = B->data<int32_t>();
    int32_t* a = acc.data<int32_t>();
    for (int64_t i = 0; i < acc.numel(); ++i) a[i] += b[(i / OS) % s.M];
  }
  const Tensor* yzp = optional_input(ctx, 7);
  if (yzp && yzp->numel() != 1) ctx.fail("y_zero_point must be a scalar, got ", shape_str(yzp->shape()));
  Tensor& Y = ctx.output(0, yzp ? yzp->dtype() : X.dtype(), acc.shape());
  const Epilogue epi = Epilogue::of(ctx.node);
  if (epi.kind != Activation::None) {
    // A fused activation (passes/fuse_qdq_conv.cpp): each sum back to its
    // real value, through the activation, then QuantizeLinear's arithmetic.
    std::vector<float> real(size_t(acc.numel()));
    const int32_t* a = acc.data<int32_t>();
    for (int64_t i = 0; i < acc.numel(); ++i) {
      const int64_t m = (i / OS) % s.M;
      real[size_t(i)] = float(a[i]) * (x_scale[0] * w_scale[w_scale.size() == 1 ? 0 : size_t(m)]);
    }
    epi.apply(real.data(), acc.numel());
    const int32_t zp = yzp ? int32_t(yzp->to_i64()[0]) : 0;
    dispatch_q8(ctx, Y.dtype(), [&](auto* tag) {
      using Q = std::remove_pointer_t<decltype(tag)>;
      quantize_floats(real.data(), y_scale[0], zp, Y.data<Q>(), acc.numel());
    });
    return;
  }
  // One row of M channels: a multiplier per channel, or one.
  const RequantMultipliers mult = requant_multipliers(x_scale, w_scale, y_scale[0], 1, s.M);
  requantize_into(ctx, acc, mult.values, yzp ? int32_t(yzp->to_i64()[0]) : 0, Y,
                  [&](int64_t i) { return mult.at((i / OS) % s.M); });
}

KESTREL_OP(Conv, {.min_opset = 1, .run = run_conv, .uses_products = true});
KESTREL_OP(ConvInteger, {.min_opset = 10, .run = run_conv_integer, .needs_fp32_storage = true, .uses_products = true});
KESTREL_OP(QLinearConv, {.min_opset = 10, .run = run_qlinear_conv, .uses_products = true});

}  // namespace kestrel::ops

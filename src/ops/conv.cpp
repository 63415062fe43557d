// Conv (1-D/2-D/3-D, grouped, depthwise, dilated), ConvInteger and QLinearConv.
// Float paths: 1x1 stride-1 convolutions are one GEMM on the input as is;
// depthwise ones run a direct kernel; everything else is im2col in bounded
// chunks of output positions followed by SGEMM.
#include <cstring>

#include "ops/common.h"
#include "ops/conv_depthwise.h"
#include "ops/conv_util.h"
#include "ops/epilogue.h"
#include "ops/gemm_util.h"
#include "ops/igemm_exact.h"
#include "ops/requantize.h"

namespace kestrel::ops {
namespace {

// Column buffer budget in elements: keeps the im2col chunk cache-sized.
constexpr int64_t kColBudget = 1 << 19;

struct ConvShape {
  int64_t N, C, M, group, Cg, Mg;
  WindowGeom g;
};

// Validates X/W (and the kernel_shape/group attributes) and resolves the window geometry.
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

Shape out_shape(const ConvShape& s) {
  Shape out{s.N, s.M};
  out.insert(out.end(), s.g.out.begin(), s.g.out.end());
  return out;
}

void run_conv(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& Wt = ctx.input(1);
  if (X.dtype() != DType::Float32 || Wt.dtype() != DType::Float32)
    ctx.fail("supports float32 (and float16 via float32) only, got ", dtype_name(X.dtype()), " input and ",
             dtype_name(Wt.dtype()), " weight");
  ConvShape s = conv_shape(ctx, X, Wt);
  const WindowGeom& g = s.g;
  const float* bias = nullptr;
  if (ctx.has_input(2)) {
    const Tensor& B = ctx.input(2);
    if (B.dtype() != DType::Float32 || B.numel() != s.M)
      ctx.fail("bias ", shape_str(B.shape()), " must hold one float per output channel (", s.M, ")");
    bias = B.data<float>();
  }
  Tensor& Y = ctx.output(0, DType::Float32, out_shape(s));
  const int64_t IS = g.in_size(), OS = g.out_size(), KS = g.kernel_size();
  const float* x = X.data<float>();
  const float* w = Wt.data<float>();
  float* y = Y.data<float>();
  if (Y.numel() == 0) return;

  const Epilogue epi = Epilogue::of(ctx.node);  // a fused activation, if any
  // Depthwise (channel multiplier Mg). A single-channel input (group 1) is
  // better served by one GEMM over all output channels.
  if (s.Cg == 1 && s.group > 1 && g.nd <= 2) {
    parallel_for(ctx, s.N * s.M, 1, [&](int64_t p) {
      int64_t n = p / s.M, m = p % s.M;
      depthwise_plane(g, x + (n * s.C + m / s.Mg) * IS, w + m * KS, bias ? bias[m] : 0.f, y + p * OS);
      epi.apply(y + p * OS, OS);
    });
    return;
  }

  // GEMM paths: each task multiplies one chunk of output positions on its own
  // thread, then adds the bias and applies the activation while the chunk is
  // still in cache. 1x1 stride-1 convolutions read the input in place; the
  // others gather their windows first (im2col).
  bool pointwise = KS == 1;
  for (int d = 0; d < g.nd; ++d)
    pointwise = pointwise && g.stride[size_t(d)] == 1 && g.pad_begin[size_t(d)] == 0 && g.pad_end[size_t(d)] == 0;
  const int64_t K = s.Cg * KS;
  const int64_t per_thread = (OS + ctx.threads() - 1) / ctx.threads();
  const int64_t budget = pointwise ? kColBudget * 4 : kColBudget;  // no column copy: larger chunks pay
  const int64_t chunk = std::min(OS, std::max<int64_t>(16, std::min(budget / std::max<int64_t>(K, 1), per_thread)));
  const int64_t nchunks = (OS + chunk - 1) / chunk;
  // Few output positions (a 1-D conv over a short signal) leave threads idle
  // while one of them streams all the weights: split the output channels too,
  // in blocks of at least 32 rows (each block gathers its own columns).
  // Only worth it past ~2M multiply-adds: below that, waking a team of
  // threads costs more than it saves (Silero VAD's convolutions on 16 cores).
  const int64_t tasks = s.N * s.group * nchunks;
  const bool big = s.N * s.M * OS * K >= (int64_t(1) << 21);
  const int64_t mparts = tasks >= ctx.threads() || !big
                             ? 1
                             : std::clamp<int64_t>(std::min(ctx.threads() / tasks, s.Mg / 32), 1, s.Mg);
  const int64_t mblock = (s.Mg + mparts - 1) / mparts;
  parallel_for(ctx, tasks * mparts, 1, [&](int64_t task) {
    static thread_local std::vector<float> col;
    const int64_t t = task / mparts, m0 = (task % mparts) * mblock, m1 = std::min(s.Mg, m0 + mblock);
    if (m0 >= m1) return;
    int64_t ng = t / nchunks, o0 = (t % nchunks) * chunk, o1 = std::min(OS, o0 + chunk), nc = o1 - o0;
    int64_t n = ng / s.group, gi = ng % s.group;
    const float* xg = x + (n * s.C + gi * s.Cg) * IS;
    const float* b = xg + o0;
    int64_t ldb = IS;
    // A few positions (a 1-D conv over a short signal) gather each window as
    // a row: the narrow GEMM wants the positions contiguous in K.
    const bool as_rows = !pointwise && nc <= 8 && g.nd <= 2;
    if (!pointwise) {
      col.resize(size_t(K * nc));
      if (as_rows) im2row(g, xg, s.Cg, o0, o1, col.data());
      else im2col(g, xg, s.Cg, o0, o1, col.data());
      b = col.data();
      ldb = as_rows ? K : nc;
    }
    float* yc = y + (n * s.M + gi * s.Mg + m0) * OS + o0;
    sgemm_serial(false, as_rows, m1 - m0, nc, K, 1.f, w + (gi * s.Mg + m0) * K, K, b, ldb, 0.f, yc, OS);
    for (int64_t m = 0; m < m1 - m0; ++m) {
      float* row = yc + m * OS;
      if (bias) {
        float bv = bias[gi * s.Mg + m0 + m];
        for (int64_t j = 0; j < nc; ++j) row[j] += bv;
      }
      epi.apply(row, nc);
    }
  });
}

// Exact int32 convolution of 8-bit X and W minus their zero points (a
// scalar for X; a scalar or one per output channel for W).
Tensor conv_int32(const KernelContext& ctx, const ConvShape& s, const Tensor& X, const Tensor& Wt, const Tensor* xzp,
                  const Tensor* wzp) {
  const WindowGeom& g = s.g;
  if (xzp && xzp->numel() != 1) ctx.fail("x_zero_point must be a scalar, got ", shape_str(xzp->shape()));
  // The input goes straight to float (exact: |x - zp| <= 255) for the float GEMM below.
  std::vector<float> xf = widen_int8<float>(
      ctx, X, xzp, [](int64_t) { return 0; }, 1, "input");
  // A per-output-channel weight zero point covers one filter of Cg * kernel values.
  const int64_t filter = s.Cg * g.kernel_size();
  std::vector<int32_t> w = widen_int8(
      ctx, Wt, wzp, [&](int64_t i) { return i / filter; }, s.M, "weight");
  Tensor Y(DType::Int32, out_shape(s));
  if (Y.numel() == 0) return Y;
  const int64_t IS = g.in_size(), OS = g.out_size(), KS = g.kernel_size(), K = s.Cg * KS;
  // Exact integer products on the float GEMM (igemm_exact.h): the weights
  // split once, and chunks of output positions gathered and multiplied per
  // thread as in Conv.
  SplitOperand ws = split_operand(w.data(), s.M, K);
  int32_t* y = Y.data<int32_t>();
  const int64_t per_thread = (OS + ctx.threads() - 1) / ctx.threads();
  const int64_t chunk = std::min(OS, std::max<int64_t>(16, std::min(kColBudget / std::max<int64_t>(K, 1), per_thread)));
  const int64_t nchunks = (OS + chunk - 1) / chunk;
  parallel_for(ctx, s.N * s.group * nchunks, 1, [&](int64_t t) {
    static thread_local std::vector<float> col;
    int64_t ng = t / nchunks, o0 = (t % nchunks) * chunk, o1 = std::min(OS, o0 + chunk), nc = o1 - o0;
    int64_t n = ng / s.group, gi = ng % s.group;
    col.resize(size_t(K * nc));
    im2col(g, xf.data() + (n * s.C + gi * s.Cg) * IS, s.Cg, o0, o1, col.data());
    igemm_exact_serial(ws, gi * s.Mg, s.Mg, nc, col.data(), nc, y + (n * s.M + gi * s.Mg) * OS + o0, OS);
  });
  return Y;
}

const Tensor* optional_input(const KernelContext& ctx, int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

void run_conv_integer(KernelContext& ctx) {
  ConvShape s = conv_shape(ctx, ctx.input(0), ctx.input(1));
  ctx.set_output(0, conv_int32(ctx, s, ctx.input(0), ctx.input(1), optional_input(ctx, 2), optional_input(ctx, 3)));
}

// QLinearConv: inputs x, x_scale, x_zero_point, w, w_scale, w_zero_point,
// y_scale, y_zero_point and an optional int32 bias B.
void run_qlinear_conv(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& Wt = ctx.input(3);
  ConvShape s = conv_shape(ctx, X, Wt);
  std::vector<float> x_scale = read_scales(ctx, 1, 1, "x_scale");
  std::vector<float> w_scale = read_scales(ctx, 4, s.M, "w_scale");
  std::vector<float> y_scale = read_scales(ctx, 6, 1, "y_scale");
  Tensor acc = conv_int32(ctx, s, X, Wt, optional_input(ctx, 2), optional_input(ctx, 5));
  const int64_t OS = s.g.out_size();
  if (const Tensor* B = optional_input(ctx, 8)) {
    if (B->dtype() != DType::Int32 || B->numel() != s.M)
      ctx.fail("bias ", dtype_name(B->dtype()), " ", shape_str(B->shape()), " must hold one int32 per output channel (",
               s.M, ")");
    const int32_t* b = B->data<int32_t>();
    int32_t* a = acc.data<int32_t>();
    for (int64_t i = 0; i < acc.numel(); ++i) a[i] += b[(i / OS) % s.M];
  }
  std::vector<float> mult(w_scale.size());
  for (size_t m = 0; m < w_scale.size(); ++m) mult[m] = x_scale[0] * w_scale[m] / y_scale[0];
  const Tensor* yzp = optional_input(ctx, 7);
  if (yzp && yzp->numel() != 1) ctx.fail("y_zero_point must be a scalar, got ", shape_str(yzp->shape()));
  Tensor& Y = ctx.output(0, yzp ? yzp->dtype() : X.dtype(), acc.shape());
  requantize_into(ctx, acc, mult, yzp ? int32_t(yzp->to_i64()[0]) : 0, Y, [&](int64_t i) { return (i / OS) % s.M; });
}

}  // namespace

KESTREL_OP(Conv, {.min_opset = 1, .run = run_conv});
KESTREL_OP(ConvInteger, {.min_opset = 10, .run = run_conv_integer, .needs_fp32_storage = true});
KESTREL_OP(QLinearConv, {.min_opset = 10, .run = run_qlinear_conv});

}  // namespace kestrel::ops

// ConvTranspose: per group, col = W^T * X by SGEMM, then col2im scatters the
// columns into the (larger) output, in bounded chunks of input positions.
#include "ops/common.h"
#include "ops/conv_util.h"
#include "ops/gemm_util.h"

namespace kestrel::ops {
namespace {

constexpr int64_t kColBudget = 1 << 19;

// Output-channel blocks per (batch, group) so that every thread gets a task.
int64_t channel_blocks(int64_t images, int64_t channels, int threads) {
  if (images >= threads) return 1;
  return std::min(channels, (threads + images - 1) / images);
}

void run_conv_transpose(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& X = ctx.input(0);
  const Tensor& Wt = ctx.input(1);
  if (X.dtype() != DType::Float32 || Wt.dtype() != DType::Float32)
    ctx.fail("supports float32 (and float16 via float32) only, got ", dtype_name(X.dtype()));
  if (X.rank() < 3) ctx.fail("input must be N x C x spatial..., got ", shape_str(X.shape()));
  if (Wt.rank() != X.rank())
    ctx.fail("weight ", shape_str(Wt.shape()), " and input ", shape_str(X.shape()), " must have the same rank");
  const int64_t N = X.dim(0), C = X.dim(1), group = node.attr_i("group", 1);
  if (group < 1 || C % group) ctx.fail("group ", group, " must divide input channels ", C);
  if (Wt.dim(0) != C)
    ctx.fail("weight ", shape_str(Wt.shape()), " must have ", C, " input channels like input ", shape_str(X.shape()));
  const int64_t Cg = C / group, Mg = Wt.dim(1), M = Mg * group;
  const size_t nd = size_t(X.rank() - 2);

  WindowGeom g;  // the convolution whose adjoint this is: its input is our output
  g.nd = int(nd);
  g.out = spatial_dims(X.shape());
  g.kernel = spatial_dims(Wt.shape());
  if (node.has("kernel_shape") && node.attr_ints("kernel_shape") != g.kernel)
    ctx.fail("kernel_shape attribute ", shape_str(node.attr_ints("kernel_shape")), " disagrees with weight ",
             shape_str(Wt.shape()));
  g.stride = node.attr_ints("strides", std::vector<int64_t>(nd, 1));
  g.dil = node.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  std::vector<int64_t> out_pad = node.attr_ints("output_padding", std::vector<int64_t>(nd, 0));
  std::vector<int64_t> out_shape = node.attr_ints("output_shape");
  std::string auto_pad = node.attr_s("auto_pad", "NOTSET");
  if (g.stride.size() != nd || g.dil.size() != nd || pads.size() != 2 * nd || out_pad.size() != nd)
    ctx.fail("strides/dilations/output_padding need ", nd, " values and pads ", 2 * nd);
  if (out_shape.size() > nd) out_shape.erase(out_shape.begin(), out_shape.end() - long(nd));  // N, C given too
  if (!out_shape.empty() && out_shape.size() != nd) ctx.fail("output_shape needs ", nd, " spatial values");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    ctx.fail("auto_pad '", auto_pad, "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  g.pad_begin.assign(pads.begin(), pads.begin() + long(nd));
  g.pad_end.assign(pads.begin() + long(nd), pads.end());
  g.in.resize(nd);
  for (size_t i = 0; i < nd; ++i) {
    if (g.stride[i] < 1 || g.dil[i] < 1) ctx.fail("strides and dilations must be positive");
    if (g.pad_begin[i] < 0 || g.pad_end[i] < 0 || out_pad[i] < 0) ctx.fail("pads and output_padding must be non-negative");
    // Strides, dilations, pads and sizes are the model's numbers: checked, so
    // a wrapped size cannot pass for a small one.
    int64_t full = 0, ext = 0, strided = 0;
    if (!mul_fits(g.stride[i], g.out[i] - 1, full) || !add_fits(full, out_pad[i], full) ||
        !mul_fits(g.dil[i], g.kernel[i] - 1, ext) || !add_fits(full, ext, full) || !add_fits(full, 1, full) ||
        !mul_fits(g.out[i], g.stride[i], strided))
      ctx.fail("spatial output dim ", i, " overflows int64 (input ", g.out[i], ", stride ", g.stride[i], ", dilation ",
               g.dil[i], ", output_padding ", out_pad[i], ")");
    bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    if (auto_pad == "VALID") g.pad_begin[i] = g.pad_end[i] = 0;
    if (!out_shape.empty() || same) {
      int64_t target = !out_shape.empty() ? out_shape[i] : strided;
      int64_t total = std::max<int64_t>(0, full - target);
      // SAME_UPPER puts the odd pad at the end of the output, like the ONNX reference.
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
      g.in[i] = target;
    } else {
      g.in[i] = full - g.pad_begin[i] - g.pad_end[i];
    }
    if (g.in[i] < 0) ctx.fail("pads make spatial output dim ", i, " negative (", g.in[i], ")");
  }

  Shape yshape{N, M};
  yshape.insert(yshape.end(), g.in.begin(), g.in.end());
  Tensor& Y = ctx.output(0, DType::Float32, yshape);
  float* y = Y.data<float>();
  const int64_t OS = g.in_size(), IS = g.out_size(), KS = g.kernel_size(), R = Mg * KS;
  if (ctx.has_input(2)) {
    const Tensor& B = ctx.input(2);
    if (B.dtype() != DType::Float32 || B.numel() != M)
      ctx.fail("bias ", shape_str(B.shape()), " must hold one float per output channel (", M, ")");
    const float* b = B.data<float>();
    parallel_for(ctx, N * M, 16, [&](int64_t p) { std::fill_n(y + p * OS, OS, b[p % M]); });
  } else {
    std::fill_n(y, Y.numel(), 0.f);  // col2im accumulates into Y
  }
  if (Y.numel() == 0 || IS == 0) return;
  const float* x = X.data<float>();
  const float* w = Wt.data<float>();
  // One parallel task per block of output channels: its columns scatter only
  // into its own channels, so tasks never write the same output.
  const int64_t tasks_per_group = channel_blocks(N * group, Mg, ctx.threads());
  const int64_t mb = (Mg + tasks_per_group - 1) / tasks_per_group;
  const int64_t chunk = std::max<int64_t>(1, std::min(IS, kColBudget / std::max<int64_t>(mb * KS, 1)));
  parallel_for(ctx, N * group * tasks_per_group, 1, [&](int64_t t) {
    static thread_local std::vector<float> col;
    int64_t ng = t / tasks_per_group, m0 = (t % tasks_per_group) * mb, m1 = std::min(Mg, m0 + mb);
    if (m0 >= m1) return;
    int64_t n = ng / group, gi = ng % group;
    const float* xg = x + (n * C + gi * Cg) * IS;
    float* yg = y + (n * M + gi * Mg) * OS;
    for (int64_t o0 = 0; o0 < IS; o0 += chunk) {
      int64_t o1 = std::min(IS, o0 + chunk), nc = o1 - o0;
      col.resize(size_t((m1 - m0) * KS * nc));
      // col[(m1-m0)*KS, nc] = W_g^T[m0*KS:m1*KS, Cg] * X_g[Cg, o0:o1]
      sgemm(ctx, true, false, (m1 - m0) * KS, nc, Cg, 1.f, w + gi * Cg * R + m0 * KS, R, xg + o0, IS, 0.f,
                   col.data(), nc);
      col2im(g, col.data(), m1 - m0, o0, o1, yg + m0 * OS);
    }
  });
}

}  // namespace

KESTREL_OP(ConvTranspose, {.min_opset = 1, .run = run_conv_transpose, .uses_products = true});

}  // namespace kestrel::ops

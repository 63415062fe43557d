// ConvTranspose (1-D and 2-D, float) as a gather per output element
// (shaders/conv_transpose.comp). Output size and pads follow the CPU kernel
// (src/ops/conv_transpose.cpp): output_shape or auto_pad SAME_* fix the size
// and the pads follow from it; otherwise pads and output_padding give it.
#include "backends/vulkan/ops/window.h"

namespace kestrel::vulkan {
namespace {

struct TransposePush {
  uint32_t base, n;
  Window2DPush win;  // H, W: input; OH, OW: output; pads at the output's begin
  int32_t Cg, Mg, groups;
};

void record_conv_transpose(OpContext& ctx) {
  require_float(ctx, {0, 1, 2});
  const ir::Node& node = ctx.node;
  const GpuTensor& X = ctx.input(0);
  const GpuTensor& Wt = ctx.input(1);
  if (X.shape.size() < 3) ctx.fail("input must be N x C x spatial..., got ", shape_str(X.shape));
  if (Wt.shape.size() != X.shape.size())
    ctx.fail("weight ", shape_str(Wt.shape), " and input ", shape_str(X.shape), " must have the same rank");
  if (X.shape.size() > 4) ctx.unsupported(X.shape.size() - 2, "-D ConvTranspose runs on the CPU");
  const int64_t N = X.shape[0], C = X.shape[1], group = node.attr_i("group", 1);
  if (group < 1 || C % group) ctx.fail("group ", group, " must divide input channels ", C);
  if (Wt.shape[0] != C)
    ctx.fail("weight ", shape_str(Wt.shape), " must have ", C, " input channels like input ", shape_str(X.shape));
  const int64_t Cg = C / group, Mg = Wt.shape[1], M = Mg * group;
  const size_t nd = X.shape.size() - 2;

  std::vector<int64_t> in = ops::spatial_dims(X.shape), kernel = ops::spatial_dims(Wt.shape);
  if (node.has("kernel_shape") && node.attr_ints("kernel_shape") != kernel)
    ctx.fail("kernel_shape attribute ", shape_str(node.attr_ints("kernel_shape")), " disagrees with weight ",
             shape_str(Wt.shape));
  std::vector<int64_t> stride = node.attr_ints("strides", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> dil = node.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  std::vector<int64_t> out_pad = node.attr_ints("output_padding", std::vector<int64_t>(nd, 0));
  std::vector<int64_t> out_shape = node.attr_ints("output_shape");
  std::string auto_pad = node.attr_s("auto_pad", "NOTSET");
  if (stride.size() != nd || dil.size() != nd || pads.size() != 2 * nd || out_pad.size() != nd)
    ctx.fail("strides/dilations/output_padding need ", nd, " values and pads ", 2 * nd);
  if (out_shape.size() > nd) out_shape.erase(out_shape.begin(), out_shape.end() - long(nd));  // N, C given too
  if (!out_shape.empty() && out_shape.size() != nd) ctx.fail("output_shape needs ", nd, " spatial values");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    ctx.fail("auto_pad '", auto_pad, "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  std::vector<int64_t> pad_begin(nd), out(nd);
  for (size_t i = 0; i < nd; ++i) {
    if (stride[i] < 1 || dil[i] < 1) ctx.fail("strides and dilations must be positive");
    int64_t full = stride[i] * (in[i] - 1) + out_pad[i] + dil[i] * (kernel[i] - 1) + 1;
    bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    int64_t pb = auto_pad == "VALID" ? 0 : pads[i], pe = auto_pad == "VALID" ? 0 : pads[i + nd];
    if (!out_shape.empty() || same) {
      int64_t target = !out_shape.empty() ? out_shape[i] : in[i] * stride[i];
      int64_t total = std::max<int64_t>(0, full - target);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      out[i] = target;
    } else {
      out[i] = full - pb - pe;
    }
    if (out[i] < 0) ctx.fail("pads make spatial output dim ", i, " negative (", out[i], ")");
    pad_begin[i] = pb;
  }
  Shape yshape{N, M};
  yshape.insert(yshape.end(), out.begin(), out.end());
  require_int32_sizes(ctx, {X.numel(), Wt.numel(), shape_numel(yshape)});
  GpuTensor& Y = ctx.output(0, X.dtype, yshape);
  const bool has_bias = ctx.has_input(2);
  if (has_bias && ctx.input(2).numel() != M)
    ctx.fail("bias ", shape_str(ctx.input(2).shape), " must hold one value per output channel (", M, ")");
  if (Y.numel() == 0) return;

  const bool two = nd == 2;
  auto at = [&](const std::vector<int64_t>& v, int64_t one) { return int32_t(two ? v[0] : one); };
  Window2DPush win{at(in, 1), int32_t(in.back()), at(out, 1), int32_t(out.back()), at(stride, 1),
                   int32_t(stride.back()), at(dil, 1), int32_t(dil.back()), at(pad_begin, 0), int32_t(pad_begin.back())};
  TransposePush p{0, 0, win, int32_t(Cg), int32_t(Mg), int32_t(group)};
  const GpuTensor& bias = has_bias ? ctx.input(2) : Wt;  // bound but unread without a bias
  ctx.dispatch_elements("conv_transpose", {at(kernel, 1), int32_t(kernel.back()), has_bias},
                        {In(X), In(Wt), In(bias), Out(Y)}, &p, sizeof p, uint64_t(Y.numel()));
}

}  // namespace

KESTREL_VK_OP(ConvTranspose, {.record = record_conv_transpose});

}  // namespace kestrel::vulkan

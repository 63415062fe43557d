// com.kestrel ConvChannelsLast: a 2-D float Conv whose input, residual and
// output are channels-last ([N, H, W, C]), written by the CPU backend's
// layout pass (backends/cpu/channels_last.h) for chains of convolutions that
// oneDNN runs faster in that layout. Inputs: X [N, H, W, C], W [M, C/group,
// kH, kW] as ONNX Conv's, B [M] (optional), R [N, oH, oW, M] (optional, added
// before the activation; in the output's layout); Conv's attributes, the
// fused activation (ops/epilogue.h) and kPlanarOutputAttr
// (conv_channels_last.h). The reference here is ONNX Conv's on the transposed
// tensors: the oracle for the backend's oneDNN kernel.
#include "ops/conv_channels_last.h"

#include "ops/conv.h"
#include "ops/epilogue.h"

namespace kestrel::ops {
namespace {

// [N, A, B, C] -> [N, C, A, B] (to_channels_first) or back.
Tensor permuted(const Tensor& t, bool to_channels_first) {
  const int64_t N = t.dim(0), d1 = t.dim(1), d2 = t.dim(2), d3 = t.dim(3);
  Tensor out = to_channels_first ? Tensor(DType::Float32, {N, d3, d1, d2}) : Tensor(DType::Float32, {N, d2, d3, d1});
  const float* s = t.data<float>();
  float* d = out.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < d1; ++i)
      for (int64_t j = 0; j < d2; ++j)
        for (int64_t k = 0; k < d3; ++k) {
          const float v = s[((n * d1 + i) * d2 + j) * d3 + k];
          if (to_channels_first) d[((n * d3 + k) * d1 + i) * d2 + j] = v;
          else d[((n * d2 + j) * d3 + k) * d1 + i] = v;
        }
  return out;
}

void run_conv_channels_last(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  if (X.rank() != 4 || W.rank() != 4)
    ctx.fail("takes a 2-D convolution: input ", shape_str(X.shape()), " and weight ", shape_str(W.shape()),
             " must have rank 4");
  if (X.dtype() != DType::Float32) ctx.fail("supports float32 only, got ", dtype_name(X.dtype()));
  const Tensor x = permuted(X, true);
  const ConvShape s = conv_shape(ctx, x, W);
  Tensor y(DType::Float32, conv_out_shape(s));
  const bool planar_out = ctx.node.attr_i(kPlanarOutputAttr, 0) != 0;
  Tensor r;
  if (ctx.has_input(3)) {
    const Tensor& R = ctx.input(3);
    const Shape want = planar_out ? y.shape() : Shape{y.dim(0), y.dim(2), y.dim(3), y.dim(1)};
    if (R.dtype() != DType::Float32 || R.shape() != want)
      ctx.fail("residual ", dtype_name(R.dtype()), " ", shape_str(R.shape()), " must be float32 ", shape_str(want),
               " as the output");
    r = planar_out ? R : permuted(R, true);
  }
  conv_reference(ctx, x, r.defined() ? r.data<float>() : nullptr, y);
  ctx.set_output(0, planar_out ? y : permuted(y, false));
}

}  // namespace

KESTREL_OP(ConvChannelsLast, {.domain = "com.kestrel", .run = run_conv_channels_last, .uses_products = true});

}  // namespace kestrel::ops

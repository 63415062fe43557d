// What Conv, ConvInteger and QLinearConv share between their reference
// kernels (ops/conv.cpp) and the CPU backend's fast Conv
// (backends/cpu/conv.cpp): the validation of input, weight and bias, the
// output shape, and the quantized ops' work around their int32 accumulation.
#pragma once
#include "ops/common.h"
#include "ops/conv_util.h"

namespace kestrel::ops {

struct ConvShape {
  int64_t N, C, M, group, Cg, Mg;  // batch, channels in and out, groups, per-group channels
  WindowGeom g;
};

// Validates X/W (and the kernel_shape/group attributes) and resolves the window geometry.
ConvShape conv_shape(const KernelContext& ctx, const Tensor& X, const Tensor& W);
Shape conv_out_shape(const ConvShape& s);
// Conv's float32 operands checked; its bias (input 2), or null.
const float* conv_float_operands(const KernelContext& ctx, const ConvShape& s);
// The reference float Conv of X (NCHW, which may stand in for the node's
// input 0) with the node's weight, bias and fused activation (ops/epilogue.h),
// the residual (Y's shape, or null) added before the activation, into Y of
// conv_out_shape.
void conv_reference(const KernelContext& ctx, const Tensor& X, const float* residual, Tensor& Y);

// The exact int32 convolution of 8-bit X and W minus their zero points (a
// scalar for X; a scalar or one per output channel for W).
using ConvInt32 = Tensor (*)(const KernelContext& ctx, const ConvShape& s, const Tensor& X, const Tensor& W,
                             const Tensor* x_zero_point, const Tensor* w_zero_point);
// The int32 convolution's operands as the widened values it multiplies: X
// as floats (exact: |x - zp| <= 255), W as int32.
struct ConvInt32Operands {
  std::vector<float> x;
  std::vector<int32_t> w;
};
ConvInt32Operands conv_int32_operands(const KernelContext& ctx, const ConvShape& s, const Tensor& X, const Tensor& W,
                                      const Tensor* x_zero_point, const Tensor* w_zero_point);
// ConvInteger and QLinearConv around an int32 convolution.
void run_conv_integer_with(KernelContext& ctx, ConvInt32 conv);
void run_qlinear_conv_with(KernelContext& ctx, ConvInt32 conv);

}  // namespace kestrel::ops

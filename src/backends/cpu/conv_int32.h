// The CPU backend's exact int32 convolution of 8-bit data (ops::ConvInt32):
// ConvInteger's kernel, and QLinearConv's for the shapes and CPUs its own
// kernel does not take (qlinear_conv.cpp).
#pragma once
#include "ops/conv.h"

namespace kestrel::backends::cpu {

Tensor conv_int32(const ops::KernelContext& ctx, const ops::ConvShape& s, const Tensor& X, const Tensor& Wt,
                  const Tensor* xzp, const Tensor* wzp);

}  // namespace kestrel::backends::cpu

// The CPU backend's QLinearConv and ConvInteger kernels for 2-D 8-bit data
// (qlinear_conv.cpp; registered in conv.cpp beside Conv's, as the reference
// registers the ops). Each falls back to the exact int32 convolution
// (conv_int32.h) for what it does not take.
#pragma once
#include "ops/common.h"

namespace kestrel::backends::cpu {

void run_qlinear_conv_8bit(ops::KernelContext& ctx);
void run_conv_integer_8bit(ops::KernelContext& ctx);

}  // namespace kestrel::backends::cpu

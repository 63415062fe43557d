// The CPU backend's QLinearConv kernel (qlinear_conv.cpp; registered in
// conv.cpp beside Conv's, as the reference registers the op).
#pragma once
#include "ops/common.h"

namespace kestrel::backends::cpu {

void run_qlinear_conv_8bit(ops::KernelContext& ctx);

}  // namespace kestrel::backends::cpu

// The compiled compute shaders (SPIR-V built from shaders/*.comp by
// glslangValidator at build time), as Kernels ready for Context::run.
#pragma once
#include "backends/vulkan/context.h"

namespace kestrel::vulkan {

enum class BinaryOp { Add = 0, Sub = 1, Mul = 2, Div = 3 };

// c = a OP b over float32 buffers; push constant: uint32 element count; 256 per workgroup.
Kernel binary_f32_kernel(BinaryOp op);
constexpr uint32_t kBinaryF32LocalSize = 256;

}  // namespace kestrel::vulkan

#include "backends/vulkan/kernels.h"

#include <cstdint>

#include "shaders/binary_f32.spv.h"  // generated: binary_f32_spv

namespace kestrel::vulkan {

Kernel binary_f32_kernel(BinaryOp op) { return {binary_f32_spv, sizeof(binary_f32_spv), int32_t(op)}; }

}  // namespace kestrel::vulkan

// DynamicQuantizeLinear's three passes on the device (ops/quantize.cpp):
// x's range, the scale and zero point, then x quantized to uint8. The op
// records it, and so does DynamicQuantizeMatMul before its integer product.
#pragma once
#include "backends/vulkan/op.h"

namespace kestrel::vulkan {

// x (float32) into y (uint8, x's shape, packed), scale (one float32) and
// zero_point (one uint8): the bits of the reference.
void record_dynamic_quantize(OpContext& ctx, const GpuTensor& x, const GpuTensor& y, const GpuTensor& scale,
                             const GpuTensor& zero_point);

}  // namespace kestrel::vulkan

// The element-wise sum or product of two 8-bit tensors requantized
// (shaders/qlinear_binary.comp), recorded by com.microsoft QLinearAdd and
// QLinearMul (qlinear_binary.cpp) and com.kestrel QdqAdd (qdq_add.cpp).
#pragma once
#include "backends/vulkan/op.h"

namespace kestrel::vulkan {

// op 0: add, 1: multiply. qdq: QdqAdd's form (inputs of one shape, the
// activation the fusion folded in applied before requantizing).
void record_qlinear_binary(OpContext& ctx, int op, bool qdq);

}  // namespace kestrel::vulkan

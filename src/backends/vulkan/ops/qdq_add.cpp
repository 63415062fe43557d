// com.kestrel QdqAdd (ops/qdq_add.cpp: a quantized model's residual sum, with
// the activation after it, as the QDQ fusion writes it): QLinearAdd's shader
// on two tensors of one shape, the activation applied to the sum before it
// is requantized (qlinear_binary.h).
#include "backends/vulkan/ops/qlinear_binary.h"

namespace kestrel::vulkan {
namespace {

void qdq_add(OpContext& ctx) { record_qlinear_binary(ctx, 0, true); }

}  // namespace

KESTREL_VK_OP(QdqAdd, {.domain = "com.kestrel", .record = qdq_add, .host_inputs = {1, 2, 4, 5, 6, 7}});

}  // namespace kestrel::vulkan

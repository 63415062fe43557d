// Element-wise math (shaders/unary.comp); semantics of src/ops/unary_math.cpp.
#include "backends/vulkan/ops/elementwise.h"

namespace kestrel::vulkan {

KESTREL_VK_OP(Tanh, {.record = unary<UnaryFn::Tanh>});
KESTREL_VK_OP(Exp, {.record = unary<UnaryFn::Exp>});
KESTREL_VK_OP(Log, {.record = unary<UnaryFn::Log>});
KESTREL_VK_OP(Sqrt, {.record = unary<UnaryFn::Sqrt>});
KESTREL_VK_OP(Abs, {.record = unary<UnaryFn::Abs>});
KESTREL_VK_OP(Neg, {.record = unary<UnaryFn::Neg>});
KESTREL_VK_OP(Reciprocal, {.record = unary<UnaryFn::Reciprocal>});
KESTREL_VK_OP(Floor, {.record = unary<UnaryFn::Floor>});
KESTREL_VK_OP(Ceil, {.record = unary<UnaryFn::Ceil>});
KESTREL_VK_OP(Round, {.record = unary<UnaryFn::Round>});
KESTREL_VK_OP(Erf, {.record = unary<UnaryFn::Erf>});
KESTREL_VK_OP(Sin, {.record = unary<UnaryFn::Sin>});
KESTREL_VK_OP(Cos, {.record = unary<UnaryFn::Cos>});
KESTREL_VK_OP(Tan, {.record = unary<UnaryFn::Tan>});
KESTREL_VK_OP(Asin, {.record = unary<UnaryFn::Asin>});
KESTREL_VK_OP(Acos, {.record = unary<UnaryFn::Acos>});
KESTREL_VK_OP(Atan, {.record = unary<UnaryFn::Atan>});
KESTREL_VK_OP(Sign, {.record = unary<UnaryFn::Sign>});

}  // namespace kestrel::vulkan

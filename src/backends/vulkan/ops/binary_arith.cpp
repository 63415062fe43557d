// Add, Sub, Mul, Div, Pow and Mod with broadcasting (shaders/binary.comp);
// semantics of src/ops/binary_arith.cpp.
#include "backends/vulkan/ops/elementwise.h"

namespace kestrel::vulkan {
namespace {

template <int OP>
void binary(OpContext& ctx) { record_binary(ctx, OP); }

void mod(OpContext& ctx) { record_binary(ctx, ctx.node.attr_i("fmod", 0) ? 8 : 9); }

}  // namespace

KESTREL_VK_OP(Add, {.record = binary<0>});
KESTREL_VK_OP(Sub, {.record = binary<1>});
KESTREL_VK_OP(Mul, {.record = binary<2>});
KESTREL_VK_OP(Div, {.record = binary<3>});
KESTREL_VK_OP(Pow, {.record = binary<4>});
KESTREL_VK_OP(Mod, {.record = mod});

}  // namespace kestrel::vulkan

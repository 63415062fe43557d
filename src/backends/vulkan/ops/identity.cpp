// Identity and inference Dropout: the output is the input's device tensor (no
// dispatch); semantics of src/ops/identity.cpp.
#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {
namespace {

void identity(OpContext& ctx) { ctx.set_output(0, ctx.input(0)); }

// Inference: the output is the input. The mask (all true) is left to the CPU.
void dropout(OpContext& ctx) {
  if (ctx.num_outputs() > 1 && ctx.node.outputs[1] >= 0) ctx.unsupported("the mask output is made on the CPU");
  if (ctx.has_input(2) && ctx.host_input(2).to_f32().at(0) != 0)
    ctx.fail("training_mode=true is not supported (Kestrel runs inference only)");
  ctx.set_output(0, ctx.input(0));
}

}  // namespace

KESTREL_VK_OP(Identity, {.record = identity});
KESTREL_VK_OP(Dropout, {.record = dropout, .host_inputs = {1, 2}});

}  // namespace kestrel::vulkan

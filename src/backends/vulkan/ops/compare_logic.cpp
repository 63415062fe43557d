// Comparisons of float tensors (shaders/compare.comp) and boolean logic
// (shaders/logic.comp), with broadcasting; booleans are int32 on the device.
#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {
namespace {

void record(OpContext& ctx, const char* shader, int op, const GpuTensor& a, const GpuTensor& b) {
  Shape out = broadcast_pair(ctx, a.shape, b.shape);
  require_rank(ctx, out);
  GpuTensor& c = ctx.output(0, DType::Bool, out);
  BroadcastPush p = broadcast_push(a.shape, b.shape, out);
  ctx.dispatch_elements(shader, {op}, {In(a), In(b), Out(c)}, &p, sizeof p, uint64_t(c.numel()));
}

template <int OP>
void compare(OpContext& ctx) {
  require_float(ctx, {0, 1});
  if (ctx.input(0).dtype != ctx.input(1).dtype)
    ctx.fail("inputs have different types: ", dtype_name(ctx.input(0).dtype), " and ", dtype_name(ctx.input(1).dtype));
  record(ctx, "compare", OP, ctx.input(0), ctx.input(1));
}

void require_bool(const OpContext& ctx, int i) {
  if (ctx.input(i).dtype != DType::Bool) ctx.fail("input ", i, " must be bool, got ", dtype_name(ctx.input(i).dtype));
}

template <int OP>
void logic(OpContext& ctx) {
  require_bool(ctx, 0);
  if (OP == 3) return record(ctx, "logic", OP, ctx.input(0), ctx.input(0));
  require_bool(ctx, 1);
  record(ctx, "logic", OP, ctx.input(0), ctx.input(1));
}

}  // namespace

KESTREL_VK_OP(Equal, {.min_opset = 7, .record = compare<0>});
KESTREL_VK_OP(Less, {.min_opset = 7, .record = compare<1>});
KESTREL_VK_OP(Greater, {.min_opset = 7, .record = compare<2>});
KESTREL_VK_OP(LessOrEqual, {.min_opset = 12, .record = compare<3>});
KESTREL_VK_OP(GreaterOrEqual, {.min_opset = 12, .record = compare<4>});
KESTREL_VK_OP(And, {.min_opset = 7, .record = logic<0>});
KESTREL_VK_OP(Or, {.min_opset = 7, .record = logic<1>});
KESTREL_VK_OP(Xor, {.min_opset = 7, .record = logic<2>});
KESTREL_VK_OP(Not, {.record = logic<3>});

}  // namespace kestrel::vulkan

// Max, Min and Sum over one or more inputs (shaders/binary.comp); semantics of
// src/ops/variadic.cpp.
#include "backends/vulkan/ops/elementwise.h"

namespace kestrel::vulkan {
namespace {

// Max, Min, Sum over 1..N inputs, folded pairwise.
template <int OP>
void variadic(OpContext& ctx) {
  int n = ctx.num_inputs();
  for (int i = 0; i < n; ++i) require_float(ctx, {i});
  Shape out = ctx.input(0).shape;
  for (int i = 1; i < n; ++i) out = broadcast_pair(ctx, out, ctx.input(i).shape);
  require_rank(ctx, out);
  if (n == 1) {
    ctx.set_output(0, ctx.input(0));
    return;
  }
  GpuTensor* acc = &ctx.output(0, ctx.input(0).dtype, out);
  record_binary_of(ctx, OP, ctx.input(0), ctx.input(1), *acc);
  // The accumulator is read and rewritten in place: element i only reads element i.
  for (int i = 2; i < n; ++i) record_binary_of(ctx, OP, *acc, ctx.input(i), *acc);
}

}  // namespace

KESTREL_VK_OP(Max, {.record = variadic<5>});
KESTREL_VK_OP(Min, {.record = variadic<6>});
KESTREL_VK_OP(Sum, {.record = variadic<0>});

}  // namespace kestrel::vulkan

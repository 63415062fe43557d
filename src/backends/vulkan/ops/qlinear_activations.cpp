// com.microsoft QLinearSigmoid and QLinearLeakyRelu (shaders/
// qlinear_table.comp): each byte through the table of its 256 values that
// the host builds as the CPU does (ops/qlinear_activations.h), so the
// outputs are the CPU's bit for bit. Scales and zero points (one value
// each) read on the host.
#include "backends/vulkan/ops/requantize.h"
#include "ops/qlinear_activations.h"

namespace kestrel::vulkan {
namespace {

template <typename MakeTable>
void record_table_op(OpContext& ctx, MakeTable make_table) {
  const GpuTensor& X = ctx.input(0);
  const std::array<uint8_t, 256> table =
      make_table(X.dtype, host_qparam(ctx, 1, 2, X.dtype, "X"), host_qparam(ctx, 3, 4, X.dtype, "Y"));
  require_int32_sizes(ctx, {X.numel()});
  GpuTensor& Y = ctx.output(0, X.dtype, X.shape);
  if (Y.numel() == 0) return;
  const GpuTensor t = ctx.upload_i32(std::vector<int32_t>(table.begin(), table.end()));
  uint32_t p[3] = {0, 0, uint32_t(Y.numel())};
  ctx.dispatch_elements("qlinear_table", {}, {In(X), In(t), Out(Y)}, p, sizeof p, (uint64_t(Y.numel()) + 3) / 4);
}

void qlinear_sigmoid(OpContext& ctx) { record_table_op(ctx, ops::qlinear_sigmoid_table); }

void qlinear_leaky_relu(OpContext& ctx) {
  const float alpha = ctx.node.attr_f("alpha", 0.01f);
  record_table_op(ctx, [alpha](DType t, ops::QParam x, ops::QParam y) {
    return ops::qlinear_leaky_relu_table(t, x, y, alpha);
  });
}

}  // namespace

KESTREL_VK_OP(QLinearSigmoid, {.domain = "com.microsoft", .record = qlinear_sigmoid, .host_inputs = {1, 2, 3, 4}});
KESTREL_VK_OP(QLinearLeakyRelu, {.domain = "com.microsoft", .record = qlinear_leaky_relu, .host_inputs = {1, 2, 3, 4}});

}  // namespace kestrel::vulkan

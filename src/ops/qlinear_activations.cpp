// com.microsoft QLinearSigmoid and QLinearLeakyRelu (ONNX Runtime's
// quantization tools write them in the operator form): each byte through a
// table of the 256 values (qlinear_params.h), the function applied as ONNX
// Runtime applies it: the logistic of its CPU provider (ops/logistic.h),
// v >= 0 ? v : alpha * v. So the outputs are ONNX Runtime's bit for bit.
//
// Inputs: X, X_scale, X_zero_point, Y_scale, Y_zero_point (scales and zero
// points one value each, zero points optional); Y has X's type and shape.
#include "ops/qlinear_activations.h"
#include "ops/registry.h"

namespace kestrel::ops {
namespace {

template <typename MakeTable>
void run_table_op(KernelContext& ctx, MakeTable make_table) {
  const Tensor& X = ctx.input(0);
  const std::array<uint8_t, 256> table =
      make_table(X.dtype(), qparam(ctx, 1, 2, X.dtype(), "X"), qparam(ctx, 3, 4, X.dtype(), "Y"));
  Tensor& Y = ctx.output(0, X.dtype(), X.shape());
  const uint8_t* in = X.raw();
  uint8_t* out = Y.raw();
  parallel_for(ctx, (X.numel() + 16383) / 16384, 1, [&](int64_t b) {
    const int64_t at = b * 16384;
    apply_table(table, in + at, out + at, std::min<int64_t>(16384, X.numel() - at));
  });
}

void run_qlinear_sigmoid(KernelContext& ctx) { run_table_op(ctx, qlinear_sigmoid_table); }

void run_qlinear_leaky_relu(KernelContext& ctx) {
  const float alpha = ctx.node.attr_f("alpha", 0.01f);
  run_table_op(ctx, [alpha](DType t, QParam x, QParam y) { return qlinear_leaky_relu_table(t, x, y, alpha); });
}

}  // namespace

KESTREL_OP(QLinearSigmoid, {.domain = "com.microsoft", .run = run_qlinear_sigmoid});
KESTREL_OP(QLinearLeakyRelu, {.domain = "com.microsoft", .run = run_qlinear_leaky_relu});

}  // namespace kestrel::ops

// com.microsoft QLinearAdd and QLinearMul (ONNX Runtime's quantization tools
// write them in the operator form): two 8-bit tensors, broadcast as NumPy
// does, each value dequantized (scale * (q - zero_point), in float), added
// or multiplied, divided by C's scale, rounded half to even, offset by C's
// zero point and saturated: the arithmetic of ONNX Runtime's reference
// kernels. Its x86 kernels compute the sum in fixed point where the scale
// ratios allow, which can land one step away (tests/python/
// test_qoperator_models.py holds the two within one step).
//
// Inputs: A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale,
// C_zero_point (scales and zero points one value each, zero points
// optional); A, B and C of one 8-bit type.
#include <algorithm>
#include <cmath>

#include "ops/qlinear_params.h"
#include "ops/registry.h"

namespace kestrel::ops {
namespace {

template <typename Q, typename F>
void qlinear_binary(KernelContext& ctx, const Tensor& A, const Tensor& B, QParam a, QParam b, QParam c, Tensor& C,
                    F&& op) {
  const Shape& out = C.shape();
  const std::vector<int64_t> sa = broadcast_strides(A.shape(), out), sb = broadcast_strides(B.shape(), out);
  const Q* pa = A.data<Q>();
  const Q* pb = B.data<Q>();
  Q* pc = C.data<Q>();
  const int rank = int(out.size());
  const float lo = float(std::numeric_limits<Q>::lowest()), hi = float(std::numeric_limits<Q>::max());
  parallel_for(ctx, C.numel(), 1 << 14, [&](int64_t i) {
    int64_t ia = 0, ib = 0, rest = i;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t k = rest % out[size_t(d)];
      rest /= out[size_t(d)];
      ia += k * sa[size_t(d)];
      ib += k * sb[size_t(d)];
    }
    const float va = a.scale * float(int32_t(pa[ia]) - a.zero_point);
    const float vb = b.scale * float(int32_t(pb[ib]) - b.zero_point);
    const float v = std::nearbyint(op(va, vb) / c.scale) + float(c.zero_point);
    pc[i] = std::isnan(v) ? Q(0) : Q(std::clamp(v, lo, hi));  // (a NaN scale: 0, as QuantizeLinear gives)
  });
}

template <typename F>
void run_qlinear_binary(KernelContext& ctx, F&& op) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(3);
  if (A.dtype() != B.dtype())
    ctx.fail("A and B must have one type, got ", dtype_name(A.dtype()), " and ", dtype_name(B.dtype()));
  const QParam a = qparam(ctx, 1, 2, A.dtype(), "A");
  const QParam b = qparam(ctx, 4, 5, B.dtype(), "B");
  const QParam c = qparam(ctx, 6, 7, A.dtype(), "C");
  Tensor& C = ctx.output(0, A.dtype(), broadcast_shapes(ctx, A.shape(), B.shape()));
  if (A.dtype() == DType::Int8)
    qlinear_binary<int8_t>(ctx, A, B, a, b, c, C, op);
  else
    qlinear_binary<uint8_t>(ctx, A, B, a, b, c, C, op);
}

void run_qlinear_add(KernelContext& ctx) {
  run_qlinear_binary(ctx, [](float x, float y) { return x + y; });
}
void run_qlinear_mul(KernelContext& ctx) {
  run_qlinear_binary(ctx, [](float x, float y) { return x * y; });
}

}  // namespace

KESTREL_OP(QLinearAdd, {.domain = "com.microsoft", .run = run_qlinear_add});
KESTREL_OP(QLinearMul, {.domain = "com.microsoft", .run = run_qlinear_mul});

}  // namespace kestrel::ops

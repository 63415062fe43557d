// The CPU backend's QLinearMatMul and MatMulInteger on 8-bit data as it is
// stored, for the projections of quantized transformers (the QDQ form
// becomes QLinearMatMul at load, passes/fuse_qdq_matmul.cpp; dynamically
// quantized models run MatMulInteger after DynamicQuantizeLinear, attention's
// products among them): where the CPU has AVX2, A's rows times B's panels on
// the integer product (qgemm_product.h; vpdpbusd on AVX-512 VNNI), per batch
// where B has batches as A does, exact in int32, zero points of any value,
// each sum then requantized as ONNX Runtime does (ops/requantize.h) or
// written as int32.
// Nothing of the output's size is held in int32 or float beside it. Other
// shapes, per-row zero points or scales of A, and other CPUs take the
// reference kernel.
#include <algorithm>
#include <cstring>
#include <optional>

#include "backends/cpu/fast_kernels.h"
#include "backends/cpu/qgemm_product.h"
#include "ops/requantize.h"

namespace kestrel::backends::cpu {

namespace {

using namespace ops;

bool eight_bit(DType t) { return t == DType::UInt8 || t == DType::Int8; }

const Tensor* optional(const KernelContext& ctx, int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

// The product's view of one node: B a matrix [K, N] and A [..., K] (its
// leading dimensions folded into rows), or both with the same leading
// dimensions (attention's products), one product per batch; and their zero
// points.
struct Operands {
  QGemmProblem q;  // the first batch's
  Shape out;
  int64_t batches = 1, a_step = 0, b_step = 0, y_step = 0;  // (bytes of A and B, elements of Y)
};

// A (input a, zero point az) and B (b, bz) where the kernel takes them:
// 8-bit, shaped as Operands says, A's zero point one value, B's one or one
// per column; nullopt otherwise.
std::optional<Operands> read_operands(const KernelContext& ctx, int a, int az, int b, int bz) {
  if (!qgemm_available()) return std::nullopt;
  const Tensor& A = ctx.input(a);
  const Tensor& B = ctx.input(b);
  if (!eight_bit(A.dtype()) || !eight_bit(B.dtype()) || B.rank() < 2 || A.rank() < 1) return std::nullopt;
  Operands o;
  QGemmProblem& q = o.q;
  q.K = A.shape().back();
  q.N = B.shape().back();
  if (B.dim(B.rank() - 2) != q.K) return std::nullopt;  // (the reference names the mismatch)
  if (B.rank() > 2) {
    if (A.rank() != B.rank() || !std::equal(A.shape().begin(), A.shape().end() - 2, B.shape().begin()))
      return std::nullopt;  // (broadcast batches: the reference)
    o.batches = q.K == 0 ? 0 : B.numel() / (q.K * q.N);
  }
  q.rows = q.K == 0 || o.batches == 0 ? 0 : A.numel() / q.K / o.batches;
  q.a = A.data<uint8_t>();
  q.a_signed = A.dtype() == DType::Int8;
  q.b = B.data<uint8_t>();
  q.b_unsigned = B.dtype() == DType::UInt8;
  o.a_step = q.rows * q.K;
  o.b_step = q.K * q.N;
  o.y_step = q.rows * q.N;
  o.out = A.shape();
  o.out.back() = q.N;
  if (!read_zero_points(optional(ctx, az), A.dtype(), optional(ctx, bz), B.dtype(), q)) return std::nullopt;
  return o;
}

// Each batch's product into its part of e's output (of `elem` bytes a value).
void run_batches(KernelContext& ctx, const Operands& o, const QGemmEpilogue& e, size_t elem) {
  for (int64_t i = 0; i < o.batches; ++i) {
    QGemmProblem q = o.q;
    q.a += i * o.a_step;
    q.b += i * o.b_step;
    QGemmEpilogue ei = e;
    if (ei.y32) ei.y32 += i * o.y_step;
    if (ei.y8) ei.y8 = static_cast<uint8_t*>(ei.y8) + i * o.y_step * int64_t(elem);
    run_qgemm(ctx, q, ei);
  }
}

// MatMulInteger: a, b, a_zero_point, b_zero_point; int32 out.
void run_matmul_integer_8bit(KernelContext& ctx) {
  const std::optional<Operands> o = read_operands(ctx, 0, 2, 1, 3);
  if (!o) return run_reference_kernel(ctx);
  Tensor& Y = ctx.output(0, DType::Int32, o->out);
  if (Y.numel() == 0) return;
  if (o->q.K == 0) {
    std::memset(Y.data<int32_t>(), 0, size_t(Y.numel()) * 4);
    return;
  }
  QGemmEpilogue e;
  e.y32 = Y.data<int32_t>();
  run_batches(ctx, *o, e, 4);
}

// QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point,
// y_scale, y_zero_point; requantized out.
void run_qlinear_matmul_8bit(KernelContext& ctx) {
  const std::optional<Operands> o = read_operands(ctx, 0, 2, 3, 5);
  const Tensor* yz = optional(ctx, 7);
  if (!o || o->q.K == 0 || ctx.input(1).numel() != 1 || (yz && yz->numel() != 1)) return run_reference_kernel(ctx);
  const std::vector<float> as = read_scales(ctx, 1, 1, "a_scale"), bs = read_scales(ctx, 4, o->q.N, "b_scale"),
                           ys = read_scales(ctx, 6, 1, "y_scale");
  if (ys.size() != 1) return run_reference_kernel(ctx);
  std::vector<float> mult(bs.size());
  for (size_t n = 0; n < bs.size(); ++n) mult[n] = as[0] * bs[n] / ys[0];  // (the reference's order)
  Tensor& Y = ctx.output(0, yz ? yz->dtype() : ctx.input(0).dtype(), o->out);
  if (Y.numel() == 0) return;
  QGemmEpilogue e;
  dispatch_q8(ctx, Y.dtype(), [&](auto* tag) {
    using Q = std::remove_pointer_t<decltype(tag)>;
    e.y8 = Y.data<Q>();
    e.y_signed = std::is_same_v<Q, int8_t>;
  });
  e.mult = mult.data();
  e.mult_per_column = mult.size() > 1;
  e.zero_point = yz ? int32_t(yz->to_i64()[0]) : 0;
  run_batches(ctx, *o, e, 1);
}

}  // namespace

KESTREL_CPU_KERNEL(MatMulInteger, {.min_opset = 10, .run = run_matmul_integer_8bit});
KESTREL_CPU_KERNEL(QLinearMatMul, {.min_opset = 10, .run = run_qlinear_matmul_8bit});

}  // namespace kestrel::backends::cpu

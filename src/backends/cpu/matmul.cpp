// The CPU backend's QLinearMatMul and MatMulInteger on 8-bit data as it is
// stored, for the projections of quantized transformers (the QDQ form
// becomes QLinearMatMul at load, passes/fuse_qdq_matmul.cpp; dynamically
// quantized models run MatMulInteger after DynamicQuantizeLinear): where the
// CPU has AVX2 and B is a matrix, A's rows (its batch dimensions folded in)
// times B's panels on the integer product (qgemm_product.h; vpdpbusd on
// AVX-512 VNNI), exact in int32, zero points of any value, each sum then
// requantized as ONNX Runtime does (ops/requantize.h) or written as int32.
// Nothing of the output's size is held in int32 or float beside it. Other
// shapes, per-row zero points or scales of A, and other CPUs take the
// reference kernel.
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

// The product's view of one node: A as [rows, K] (its leading dimensions
// folded into rows), B as [K, N], and their zero points.
struct Operands {
  QGemmProblem q;
  Shape out;
};

// A (input a, zero point az) and B (b, bz) where the kernel takes them:
// 8-bit, B two-dimensional, A's zero point one value, B's one or one per
// column; nullopt otherwise.
std::optional<Operands> read_operands(const KernelContext& ctx, int a, int az, int b, int bz) {
  if (!qgemm_available()) return std::nullopt;
  const Tensor& A = ctx.input(a);
  const Tensor& B = ctx.input(b);
  if (!eight_bit(A.dtype()) || !eight_bit(B.dtype()) || B.rank() != 2 || A.rank() < 1) return std::nullopt;
  Operands o;
  QGemmProblem& q = o.q;
  q.K = A.shape().back();
  q.N = B.dim(1);
  if (B.dim(0) != q.K) return std::nullopt;  // (the reference names the mismatch)
  q.rows = q.K == 0 ? 0 : A.numel() / q.K;
  q.a = A.data<uint8_t>();
  q.a_signed = A.dtype() == DType::Int8;
  q.b = &B;
  o.out = A.shape();
  o.out.back() = q.N;
  const Tensor* azt = optional(ctx, az);
  const Tensor* bzt = optional(ctx, bz);
  if (azt && (azt->numel() != 1 || azt->dtype() != A.dtype())) return std::nullopt;
  if (bzt && ((bzt->numel() != 1 && bzt->numel() != q.N) || bzt->dtype() != B.dtype())) return std::nullopt;
  q.a_zero = azt ? int32_t(azt->to_i64()[0]) : 0;
  const std::vector<int64_t> z = bzt ? bzt->to_i64() : std::vector<int64_t>{0};
  q.b_zero.assign(z.begin(), z.end());
  return o;
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
  run_qgemm(ctx, o->q, e);
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
  run_qgemm(ctx, o->q, e);
}

}  // namespace

KESTREL_CPU_KERNEL(MatMulInteger, {.min_opset = 10, .run = run_matmul_integer_8bit});
KESTREL_CPU_KERNEL(QLinearMatMul, {.min_opset = 10, .run = run_qlinear_matmul_8bit});

}  // namespace kestrel::backends::cpu

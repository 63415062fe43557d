// The CPU backend's com.microsoft DynamicQuantizeMatMul and
// MatMulIntegerToFloat (ops/matmul_integer_to_float.cpp; Kestrel makes them
// of ONNX Runtime's dynamic quantization and of QDQ MatMuls whose output
// stays float, passes/fuse_dynamic_quantize_matmul.cpp, fuse_qdq_matmul.cpp):
// A's bytes (DynamicQuantizeMatMul's quantized first, as DynamicQuantizeLinear
// quantizes, ops/quantize_linear.h) times B's panels on the integer product
// (qgemm_product.h), each int32 sum scaled to float in the product's
// epilogue: float(acc) * (a_scale * b_scale[n]), then + bias[n], the
// reference's roundings. Other CPUs and shapes take the reference kernel.
#include "backends/cpu/fast_kernels.h"
#include "backends/cpu/qgemm_product.h"
#include "ops/quantize_linear.h"
#include "ops/requantize.h"

namespace kestrel::backends::cpu {

namespace {

using namespace ops;

bool eight_bit(DType t) { return t == DType::UInt8 || t == DType::Int8; }

// B (input 1), the zero points (az_at: A's, -1 where the op has none;
// bz_at: B's) and the bias (bias_at) into q where the product takes them: A
// [..., K] (the caller checked its type), B an 8-bit [K, N], the zero points
// as read_zero_points takes them, the bias N floats.
bool read_b(const KernelContext& ctx, int az_at, int bz_at, int bias_at, QGemmProblem& q) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  if (!qgemm_available() || !eight_bit(B.dtype()) || A.rank() < 1 || B.rank() != 2 || A.shape().back() != B.dim(0) ||
      B.dim(0) == 0)
    return false;
  q.K = B.dim(0);
  q.N = B.dim(1);
  q.rows = A.numel() / q.K;
  q.b = B.data<uint8_t>();
  q.b_unsigned = B.dtype() == DType::UInt8;
  const Tensor* azt = az_at >= 0 && ctx.has_input(az_at) ? &ctx.input(az_at) : nullptr;
  const Tensor* bzt = ctx.has_input(bz_at) ? &ctx.input(bz_at) : nullptr;
  const Tensor* bias = ctx.has_input(bias_at) ? &ctx.input(bias_at) : nullptr;
  if (bias && (bias->dtype() != DType::Float32 || bias->numel() != q.N)) return false;
  return read_zero_points(azt, A.dtype(), bzt, B.dtype(), q);
}

// The product of q into output 0, scaled by a_scale * b_scale[n] (input
// bs_at) and biased by input bias_at where present.
void run_scaled(KernelContext& ctx, const QGemmProblem& q, float a_scale, int bs_at, int bias_at) {
  const std::vector<float> b_scale = read_scales(ctx, bs_at, q.N, "b_scale");
  std::vector<float> mult(b_scale.size());
  for (size_t n = 0; n < mult.size(); ++n) mult[n] = a_scale * b_scale[n];
  Shape out = ctx.input(0).shape();
  out.back() = q.N;
  Tensor& Y = ctx.output(0, DType::Float32, out);
  if (Y.numel() == 0) return;
  QGemmEpilogue e;
  e.yf = Y.data<float>();
  e.bias = ctx.has_input(bias_at) ? ctx.input(bias_at).data<float>() : nullptr;
  e.mult = mult.data();
  e.mult_per_column = mult.size() > 1;
  run_qgemm(ctx, q, e);
}

void run_dynamic_quantize_matmul_8bit(KernelContext& ctx) {
  QGemmProblem q;
  const Tensor& A = ctx.input(0);
  if (A.dtype() != DType::Float32 || !read_b(ctx, -1, 3, 4, q))
    return run_reference_kernel(ctx);  // (which names what is wrong, if anything)
  std::vector<uint8_t> a(size_t(A.numel()));
  const DynamicQuantized aq = dynamic_quantize(ctx, A.data<float>(), A.numel(), a.data());
  q.a = a.data();
  q.a_zero = int32_t(aq.zero_point);
  run_scaled(ctx, q, aq.scale, 2, 4);
}

void run_matmul_integer_to_float_8bit(KernelContext& ctx) {
  QGemmProblem q;
  const Tensor& A = ctx.input(0);
  if (!eight_bit(A.dtype()) || ctx.input(2).numel() != 1 || !read_b(ctx, 4, 5, 6, q))
    return run_reference_kernel(ctx);
  q.a = A.data<uint8_t>();
  q.a_signed = A.dtype() == DType::Int8;
  run_scaled(ctx, q, read_scales(ctx, 2, 1, "a_scale")[0], 3, 6);
}

}  // namespace

KESTREL_CPU_KERNEL(DynamicQuantizeMatMul, {.domain = "com.microsoft", .min_opset = 1, .run = run_dynamic_quantize_matmul_8bit});
KESTREL_CPU_KERNEL(MatMulIntegerToFloat, {.domain = "com.microsoft", .min_opset = 1, .run = run_matmul_integer_to_float_8bit});

}  // namespace kestrel::backends::cpu

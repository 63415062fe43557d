// The CPU backend's com.microsoft DynamicQuantizeMatMul (what ONNX Runtime's
// dynamic quantization writes for a MatMul, and what Kestrel makes of its
// longer form, passes/fuse_dynamic_quantize_matmul.cpp): A quantized as
// DynamicQuantizeLinear quantizes it (ops/quantize_linear.h), times B's
// panels on the VNNI product (qgemm_product.h), each int32 sum scaled to
// float in the product's epilogue: float(acc) * (a_scale * b_scale[n]),
// then + bias[n], the reference's roundings. Other CPUs and shapes take the
// reference kernel.
#include "backends/cpu/fast_kernels.h"
#include "backends/cpu/qgemm_product.h"
#include "ops/quantize_linear.h"
#include "ops/requantize.h"

namespace kestrel::backends::cpu {

namespace {

using namespace ops;

void run_dynamic_quantize_matmul_8bit(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  const bool b8 = B.dtype() == DType::UInt8 || B.dtype() == DType::Int8;
  if (!qgemm_available() || A.dtype() != DType::Float32 || !b8 || A.rank() < 1 || B.rank() != 2 ||
      A.shape().back() != B.dim(0) || B.dim(0) == 0)
    return run_reference_kernel(ctx);  // (which names what is wrong, if anything)
  QGemmProblem q;
  q.K = B.dim(0);
  q.N = B.dim(1);
  q.rows = A.numel() / q.K;
  q.b = &B;
  const Tensor* bzt = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const Tensor* bias = ctx.has_input(4) ? &ctx.input(4) : nullptr;
  if ((bzt && ((bzt->numel() != 1 && bzt->numel() != q.N) || bzt->dtype() != B.dtype())) ||
      (bias && (bias->dtype() != DType::Float32 || bias->numel() != q.N)))
    return run_reference_kernel(ctx);
  const std::vector<int64_t> z = bzt ? bzt->to_i64() : std::vector<int64_t>{0};
  q.b_zero.assign(z.begin(), z.end());
  const std::vector<float> b_scale = read_scales(ctx, 2, q.N, "b_scale");
  std::vector<uint8_t> a(size_t(A.numel()));
  const DynamicQuantized aq = dynamic_quantize(ctx, A.data<float>(), A.numel(), a.data());
  q.a = a.data();
  q.a_zero = int32_t(aq.zero_point);
  std::vector<float> mult(b_scale.size());
  for (size_t n = 0; n < mult.size(); ++n) mult[n] = aq.scale * b_scale[n];
  Shape out = A.shape();
  out.back() = q.N;
  Tensor& Y = ctx.output(0, DType::Float32, out);
  if (Y.numel() == 0) return;
  qgemm_avx512::QGemmEpilogue e;
  e.yf = Y.data<float>();
  e.bias = bias ? bias->data<float>() : nullptr;
  e.mult = mult.data();
  e.mult_per_column = mult.size() > 1;
  run_qgemm(ctx, q, e);
}

}  // namespace

KESTREL_CPU_KERNEL(DynamicQuantizeMatMul, {.domain = "com.microsoft", .min_opset = 1, .run = run_dynamic_quantize_matmul_8bit});

}  // namespace kestrel::backends::cpu

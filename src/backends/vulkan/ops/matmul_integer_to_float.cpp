// ONNX Runtime's float-output integer products (com.microsoft), as
// ops/matmul_integer_to_float.cpp has them: the exact int32 product
// (integer_product.h), then
//   Y = float(acc) * (a_scale * b_scale[n]) [+ bias[n]]
// rounded in that order, the reference's bits (in the int8 tensor cores'
// epilogue, or shaders/dequantize_product.comp over int32 scratch).
//   - MatMulIntegerToFloat (A 8-bit; what the QDQ fusion makes of a
//     quantized Linear whose output stays float: passes/fuse_qdq_matmul.cpp);
//   - DynamicQuantizeMatMul (A float, quantized first on the device as
//     DynamicQuantizeLinear quantizes it: dynamic_quantize.h).
// Both compute in float32 in every run (float32_node): the product's output
// feeds float nodes, converted there to a float16 run's storage.
#include "backends/vulkan/ops/dynamic_quantize.h"
#include "backends/vulkan/ops/integer_product.h"
#include "backends/vulkan/ops/requantize.h"

namespace kestrel::vulkan {
namespace {

// The product of A (az its zero point) and B (input 1, zero point input
// bz_at, on the host) scaled by a_scale (one float32 on the device) and
// b_scale (input bs_at, on the host), plus bias (input bias_at) where given.
void record_scaled_product(OpContext& ctx, const GpuTensor& A, const GpuTensor* az, const GpuTensor& a_scale,
                           int bs_at, int bz_at, int bias_at) {
  const GpuTensor& B = ctx.input(1);
  if (A.shape.empty() || B.shape.size() != 2 || A.shape.back() != B.shape[0])
    ctx.fail("A ", shape_str(A.shape), " and B ", shape_str(B.shape),
             " do not multiply: B must be [K, N] with K A's last dim");
  const int64_t N = B.shape[1];
  const std::vector<float> b_scale = host_scales(ctx, bs_at, N, "b_scale");
  const GpuTensor* bias = optional_input(ctx, bias_at);
  if (bias && (bias->dtype != DType::Float32 || bias->numel() != N))
    ctx.fail("bias has shape ", shape_str(bias->shape), ", not [", N, "]");
  GpuTensor bz;
  record_integer_product(ctx, A, az, B, host_weight_zero_point(ctx, bz_at, B.dtype, bz),
                         [&](const Shape& out, int64_t, int64_t, IntegerFinish& f) -> const GpuTensor* {
                           f.kind = IntegerFinish::Kind::Dequantize;
                           f.a_scale = &a_scale;
                           f.b_scale = b_scale;
                           f.bias = bias;
                           GpuTensor& Y = ctx.output(0, DType::Float32, out);
                           return Y.numel() ? &Y : nullptr;
                         });
}

void matmul_integer_to_float(OpContext& ctx) {
  const GpuTensor* az = optional_input(ctx, 4);
  if (az && az->numel() != 1) ctx.fail("a_zero_point must be one value, got ", shape_str(az->shape));
  const GpuTensor a_scale = ctx.upload_f32(host_scales(ctx, 2, 1, "a_scale"));
  record_scaled_product(ctx, ctx.input(0), az, a_scale, 3, 5, 6);
}

void dynamic_quantize_matmul(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  if (x.dtype != DType::Float32) ctx.fail("A must be float, got ", dtype_name(x.dtype));
  if (uint64_t(x.numel()) >= (uint64_t(1) << 32)) ctx.unsupported("more than 2^32 elements");
  // A quantized into scratch: packed uint8 words, its scale and zero point.
  GpuTensor q = ctx.temp_words((size_t(x.numel()) + 3) / 4 + 1);
  q.dtype = DType::UInt8;
  q.shape = x.shape;
  GpuTensor scale = ctx.temp_words(1), zp = ctx.temp_words(1);
  scale.dtype = DType::Float32;
  scale.shape = {};
  zp.dtype = DType::UInt8;
  zp.shape = {};
  record_dynamic_quantize(ctx, x, q, scale, zp);
  record_scaled_product(ctx, q, &zp, scale, 2, 3, 4);
}

}  // namespace

KESTREL_VK_OP(MatMulIntegerToFloat, {.domain = "com.microsoft",
                                     .record = matmul_integer_to_float,
                                     .host_inputs = {2, 3, 5},
                                     .float32_node = true});
KESTREL_VK_OP(DynamicQuantizeMatMul,
              {.domain = "com.microsoft", .record = dynamic_quantize_matmul, .host_inputs = {2, 3}, .float32_node = true});

}  // namespace kestrel::vulkan

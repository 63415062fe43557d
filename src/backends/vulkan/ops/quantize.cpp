// DynamicQuantizeLinear on the device: a range reduction, the scale and zero
// point, then quantization to uint8 packed four to a word. Its outputs feed
// ConvInteger/MatMulInteger on the device without a trip to the host.
//
// QuantizeLinear and DequantizeLinear (shaders/quantize_linear.comp): 8-bit
// values packed four to a word, one scale and zero point for the tensor or
// one per index along the axis. The scale and zero point are read on the
// host (a QDQ model's are initializers) and uploaded as float32 and int32;
// blocked parameters (opset 21) and other integer types stay on the CPU. So
// the quantizers a QDQ graph keeps around its integer ops run on the GPU
// instead of crossing to the CPU at every one. Divisions by the scale are
// IEEE's (div_rn.glsl), as the CPU's.
#include "backends/vulkan/ops/dynamic_quantize.h"
#include "backends/vulkan/ops/util.h"
#include "backends/vulkan/ops/window.h"
#include "ops/quantize_linear.h"

namespace kestrel::vulkan {

void record_dynamic_quantize(OpContext& ctx, const GpuTensor& x, const GpuTensor& y, const GpuTensor& scale,
                             const GpuTensor& zp) {
  const uint64_t n = uint64_t(x.numel());
  // Enough workgroups to fill a GPU, each with a slice of at least 4096 elements.
  const uint32_t groups = uint32_t(std::max<uint64_t>(1, std::min<uint64_t>(1024, (n + 4095) / 4096)));
  const uint32_t per_group = uint32_t((n + groups - 1) / groups);
  GpuTensor partial = ctx.temp_words(2 * groups);
  GpuTensor params = ctx.temp_words(2);
  struct {
    uint32_t n, per_group;
  } p1{uint32_t(n), per_group};
  ctx.dispatch("dql_minmax", {}, {In(x), Out(partial)}, &p1, sizeof p1, groups);
  uint32_t p2 = groups;
  ctx.dispatch("dql_finish", {}, {In(partial), Out(params), Out(scale), Out(zp)}, &p2, sizeof p2, 1);
  struct {
    uint32_t base, n, count;
  } p3{0, 0, uint32_t(n)};
  ctx.dispatch_elements("dql_quantize", {}, {In(x), In(params), Out(y)}, &p3, sizeof p3, (n + 3) / 4);
}

namespace {

void dynamic_quantize(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  if (x.dtype != DType::Float32) ctx.unsupported("x is ", dtype_name(x.dtype), " (float32 only)");
  if (uint64_t(x.numel()) >= (uint64_t(1) << 32)) ctx.unsupported("more than 2^32 elements");
  GpuTensor& y = ctx.output(0, DType::UInt8, x.shape);
  GpuTensor& scale = ctx.output(1, DType::Float32, {});
  GpuTensor& zp = ctx.output(2, DType::UInt8, {});
  record_dynamic_quantize(ctx, x, y, scale, zp);
}

struct QuantPush {
  uint32_t base, n, count, inner, dim;
};

// The parameters of x (shape) for the node's scale and zero point (host
// inputs 1 and 2), checked as the reference checks them; `q` is the 8-bit
// type: the zero point's, else uint8.
struct QuantParams {
  GpuTensor scale, zero;
  QuantPush push{};
  DType q = DType::UInt8;
};

QuantParams quant_params(OpContext& ctx, const Shape& x, DType given) {
  QuantParams r;
  const Tensor& scale = ctx.host_input(1);
  std::string error;
  const ops::QuantParamMap m = ops::quant_param_map(x, scale.shape(), ctx.node.attr_i("axis", 1),
                                                    ctx.node.attr_i("block_size", 0), error);
  if (!error.empty()) ctx.fail(error);
  if (m.block) ctx.unsupported("blocked scales (block_size ", m.block, ")");
  if (scale.dtype() != DType::Float32) ctx.unsupported("a ", dtype_name(scale.dtype()), " scale (float32 only)");
  r.q = given;
  std::vector<int32_t> zero(size_t(scale.numel()), 0);
  if (ctx.has_input(2)) {
    const Tensor& z = ctx.host_input(2);
    if (error = ops::zero_point_shape_error(scale.shape(), z.shape()); !error.empty()) ctx.fail(error);
    r.q = z.dtype();
    const std::vector<int64_t> v = z.to_i64();
    for (size_t i = 0; i < v.size(); ++i) zero[i] = int32_t(v[i]);
  }
  if (r.q != DType::UInt8 && r.q != DType::Int8) ctx.unsupported("quantized type ", dtype_name(r.q), " (8 bits only)");
  r.scale = ctx.upload_f32(scale.to_f32());
  r.zero = ctx.upload_i32(zero);
  r.push.inner = uint32_t(m.inner);
  r.push.dim = m.per_tensor() ? 0 : uint32_t(m.dim);
  return r;
}

void quantize_linear(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  if (x.dtype != DType::Float32) ctx.unsupported("x is ", dtype_name(x.dtype), " (float32 only)");
  require_int32_sizes(ctx, {x.numel()});
  DType given = DType::UInt8;
  if (int64_t od = ctx.node.attr_i("output_dtype", 0)) given = DType(od);
  QuantParams q = quant_params(ctx, x.shape, given);
  GpuTensor& y = ctx.output(0, q.q, x.shape);
  if (x.numel() == 0) return;
  q.push.count = uint32_t(x.numel());
  ctx.dispatch_elements("quantize_linear", {0, q.q == DType::Int8}, {In(x), In(q.scale), In(q.zero), Out(y)}, &q.push,
                        sizeof q.push, uint64_t((x.numel() + 3) / 4));
}

void dequantize_linear(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  if (!x.is_byte()) ctx.unsupported("x is ", dtype_name(x.dtype), " (8 bits only)");
  require_int32_sizes(ctx, {x.numel()});
  QuantParams q = quant_params(ctx, x.shape, x.dtype);
  if (q.q != x.dtype) ctx.fail("zero point type ", dtype_name(q.q), " differs from x type ", dtype_name(x.dtype));
  GpuTensor& y = ctx.output(0, DType::Float32, x.shape);
  if (x.numel() == 0) return;
  q.push.count = uint32_t(x.numel());
  ctx.dispatch_elements("quantize_linear", {1, x.dtype == DType::Int8}, {In(x), In(q.scale), In(q.zero), Out(y)},
                        &q.push, sizeof q.push, uint64_t(x.numel()));
}

}  // namespace

KESTREL_VK_OP(DynamicQuantizeLinear, {.min_opset = 11, .record = dynamic_quantize});
KESTREL_VK_OP(QuantizeLinear, {.min_opset = 10, .record = quantize_linear, .host_inputs = {1, 2}, .float32_node = true});
KESTREL_VK_OP(DequantizeLinear,
              {.min_opset = 10, .record = dequantize_linear, .host_inputs = {1, 2}, .float32_node = true});

}  // namespace kestrel::vulkan

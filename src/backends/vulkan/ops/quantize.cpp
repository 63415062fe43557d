// DynamicQuantizeLinear on the device: a range reduction, the scale and zero
// point, then quantization to uint8 packed four to a word. Its outputs feed
// ConvInteger/MatMulInteger on the device without a trip to the host.
#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {
namespace {

void dynamic_quantize(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  if (x.dtype != DType::Float32) ctx.unsupported("x is ", dtype_name(x.dtype), " (float32 only)");
  const uint64_t n = uint64_t(x.numel());
  if (n >= (uint64_t(1) << 32)) ctx.unsupported("more than 2^32 elements");
  // Enough workgroups to fill a GPU, each with a slice of at least 4096 elements.
  const uint32_t groups = uint32_t(std::max<uint64_t>(1, std::min<uint64_t>(1024, (n + 4095) / 4096)));
  const uint32_t per_group = uint32_t((n + groups - 1) / groups);
  GpuTensor partial = ctx.temp_words(2 * groups);
  GpuTensor params = ctx.temp_words(2);
  GpuTensor& y = ctx.output(0, DType::UInt8, x.shape);
  GpuTensor& scale = ctx.output(1, DType::Float32, {});
  GpuTensor& zp = ctx.output(2, DType::UInt8, {});
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

}  // namespace

KESTREL_VK_OP(DynamicQuantizeLinear, {.min_opset = 11, .record = dynamic_quantize});

}  // namespace kestrel::vulkan

// com.microsoft QLinearGlobalAveragePool (shaders/
// qlinear_global_average_pool.comp) with the CPU's geometry and multiplier
// (ops/qlinear_global_average_pool.h): the CPU's bits. Scales and zero
// points (one value each) read on the host.
#include "backends/vulkan/ops/requantize.h"
#include "ops/qlinear_global_average_pool.h"

namespace kestrel::vulkan {
namespace {

void qlinear_global_average_pool(OpContext& ctx) {
  const GpuTensor& X = ctx.input(0);
  const bool channels_last = ctx.node.attr_i("channels_last", 0) != 0;
  const ops::QParam xp = host_qparam(ctx, 1, 2, X.dtype, "x"), yp = host_qparam(ctx, 3, 4, X.dtype, "y");
  ops::QGlobalPool g;
  if (std::string e = ops::plan_qlinear_global_pool(X.shape, channels_last, xp, yp, g); !e.empty()) ctx.fail(e);
  require_int32_sizes(ctx, {X.numel()});
  GpuTensor& Y = ctx.output(0, X.dtype, g.out);
  if (Y.numel() == 0) return;
  struct {
    uint32_t base, n, count, channels, image;
    int32_t x_zero, y_zero;
    float multiplier;
  } p{0, 0, uint32_t(Y.numel()), uint32_t(g.C), uint32_t(g.image), xp.zero_point, yp.zero_point, g.multiplier};
  ctx.dispatch_elements("qlinear_global_average_pool", {X.dtype == DType::Int8, channels_last}, {In(X), Out(Y)}, &p,
                        sizeof p, (uint64_t(Y.numel()) + 3) / 4, 64);
}

}  // namespace

KESTREL_VK_OP(QLinearGlobalAveragePool,
              {.domain = "com.microsoft", .record = qlinear_global_average_pool, .host_inputs = {1, 2, 3, 4}});

}  // namespace kestrel::vulkan

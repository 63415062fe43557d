// MaxPool and AveragePool (1-D and 2-D windows, float), com.microsoft
// QLinearAveragePool (the same windows, 8-bit) and GlobalAveragePool /
// GlobalMaxPool (any rank, float). Geometry, ceil_mode and auto_pad resolve
// as in the CPU kernel (src/ops/pool.cpp).
#include <algorithm>

#include "backends/vulkan/ops/requantize.h"
#include "backends/vulkan/ops/window.h"

namespace kestrel::vulkan {
namespace {

struct PoolPush {
  uint32_t base, n;
  Window2DPush win;
  int32_t KH, KW, PEH, PEW;
};

// A pooling node's window over X (1-D or 2-D), its output shape in `out`.
PoolPush pool_window(OpContext& ctx, const GpuTensor& X, Shape& out) {
  if (X.shape.size() < 3) ctx.fail("input must be N x C x spatial..., got ", shape_str(X.shape));
  if (X.shape.size() > 4) ctx.unsupported(X.shape.size() - 2, "-D pooling runs on the CPU");
  std::vector<int64_t> kernel = ctx.node.attr_ints("kernel_shape");
  if (kernel.empty()) ctx.fail("kernel_shape attribute is required");
  ops::WindowGeom g = window_of(ctx, X.shape, kernel, ctx.node.attr_i("ceil_mode", 0) != 0);
  out = {X.shape[0], X.shape[1]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  require_int32_sizes(ctx, {X.numel(), shape_numel(out)});
  const bool two = g.nd == 2;
  return PoolPush{0, 0, window_push(g), int32_t(two ? g.kernel[0] : 1), int32_t(g.kernel.back()),
                  int32_t(two ? g.pad_end[0] : 0), int32_t(g.pad_end.back())};
}

void record_pool(OpContext& ctx, int op) {
  require_float(ctx, {0});
  const GpuTensor& X = ctx.input(0);
  if (op == 0 && ctx.num_outputs() > 1 && ctx.node.outputs[1] >= 0)
    ctx.unsupported("MaxPool's Indices output runs on the CPU");
  Shape out;
  PoolPush p = pool_window(ctx, X, out);
  GpuTensor& Y = ctx.output(0, X.dtype, out);
  if (Y.numel() == 0) return;
  const int32_t count_pad = op == 1 && ctx.node.attr_i("count_include_pad", 0) != 0;
  ctx.dispatch_elements("pool", {op, count_pad}, {In(X), Out(Y)}, &p, sizeof p, uint64_t(Y.numel()));
}

void max_pool(OpContext& ctx) { record_pool(ctx, 0); }
void average_pool(OpContext& ctx) { record_pool(ctx, 1); }

// Inputs: X, x_scale, x_zero_point, y_scale, y_zero_point (one value each,
// read on the host as the CPU kernel reads them).
void qlinear_average_pool(OpContext& ctx) {
  const GpuTensor& X = ctx.input(0);
  if (!X.is_byte()) ctx.fail("X must be int8 or uint8, got ", dtype_name(X.dtype));
  if (ctx.node.attr_i("channels_last", 0) != 0) ctx.fail("channels_last = 1 is not supported");
  const ops::QParam xq = host_qparam(ctx, 1, 2, X.dtype, "x"), yq = host_qparam(ctx, 3, 4, X.dtype, "y");
  Shape out;
  const PoolPush window = pool_window(ctx, X, out);
  GpuTensor& Y = ctx.output(0, X.dtype, out);
  if (Y.numel() == 0) return;
  struct {
    PoolPush w;
    uint32_t count;
    float x_scale, y_scale;
    int32_t x_zero, y_zero;
  } p{window, uint32_t(Y.numel()), xq.scale, yq.scale, xq.zero_point, yq.zero_point};
  static_assert(sizeof p <= 128, "push constants are limited to 128 bytes");
  const int32_t count_pad = ctx.node.attr_i("count_include_pad", 0) != 0;
  ctx.dispatch_elements("qlinear_average_pool", {count_pad, X.dtype == DType::Int8}, {In(X), Out(Y)}, &p, sizeof p,
                        uint64_t(Y.numel() + 3) / 4);  // a word of four outputs per invocation
}

void record_global(OpContext& ctx, int op) {
  require_float(ctx, {0});
  const GpuTensor& X = ctx.input(0);
  if (X.shape.size() < 3) ctx.fail("input must be N x C x spatial..., got ", shape_str(X.shape));
  Shape out{X.shape[0], X.shape[1]};
  out.resize(X.shape.size(), 1);
  const int64_t planes = X.shape[0] * X.shape[1], size = planes ? X.numel() / planes : 0;
  if (op == 0 && size == 0 && planes) ctx.fail("GlobalMaxPool over an empty spatial extent ", shape_str(X.shape));
  if (size == 0) ctx.unsupported("an empty spatial extent runs on the CPU");
  require_int32_sizes(ctx, {X.numel()});
  GpuTensor& Y = ctx.output(0, X.dtype, out);
  for (int64_t p0 = 0; p0 < planes; p0 += 65535) {
    int32_t push[2] = {int32_t(p0), int32_t(size)};
    ctx.dispatch("global_pool", {op}, {In(X), Out(Y)}, push, sizeof push, uint32_t(std::min<int64_t>(65535, planes - p0)));
  }
}

void global_max_pool(OpContext& ctx) { record_global(ctx, 0); }
void global_average_pool(OpContext& ctx) { record_global(ctx, 1); }

}  // namespace

KESTREL_VK_OP(MaxPool, {.record = max_pool});
KESTREL_VK_OP(AveragePool, {.record = average_pool});
KESTREL_VK_OP(QLinearAveragePool,
              {.domain = "com.microsoft", .record = qlinear_average_pool, .host_inputs = {1, 2, 3, 4}});
KESTREL_VK_OP(GlobalMaxPool, {.record = global_max_pool});
KESTREL_VK_OP(GlobalAveragePool, {.record = global_average_pool});

}  // namespace kestrel::vulkan

// Softmax and LogSoftmax (shaders/softmax.comp): one workgroup per row.
#include "backends/vulkan/ops/row_dispatch.h"
#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {
namespace {

struct SoftmaxPush {
  uint32_t row_base, row_end, n, inner;
};

void record_softmax(OpContext& ctx, bool log) {
  require_float(ctx, {0});
  const GpuTensor& x = ctx.input(0);
  int rank = int(x.shape.size());
  // Before opset 13 the input is a 2-D matrix split at `axis`; from 13 on only the one axis is normalized.
  bool legacy = ctx.node.opset < 13;
  int axis = norm_axis(ctx, ctx.node.attr_i("axis", legacy ? 1 : -1), std::max(rank, 1));
  int64_t outer = 1, n = 1, inner = 1;
  for (int i = 0; i < rank; ++i) {
    if (i < axis) outer *= x.shape[size_t(i)];
    else if (i == axis || legacy) n *= x.shape[size_t(i)];
    else inner *= x.shape[size_t(i)];
  }
  GpuTensor& y = ctx.output(0, x.dtype, x.shape);
  if (x.numel() == 0) return;
  SoftmaxPush p{0, 0, uint32_t(n), uint32_t(inner)};
  dispatch_rows(ctx, "softmax", {log ? 1 : 0}, {In(x), Out(y)}, &p, sizeof p,
                uint64_t(outer * inner), uint64_t(n));
}

void softmax(OpContext& ctx) { record_softmax(ctx, false); }
void log_softmax(OpContext& ctx) { record_softmax(ctx, true); }

}  // namespace

KESTREL_VK_OP(Softmax, {.record = softmax});
KESTREL_VK_OP(LogSoftmax, {.record = log_softmax});

}  // namespace kestrel::vulkan

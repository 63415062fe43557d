// com.microsoft QLinearGlobalAveragePool (ONNX Runtime's quantization tools
// write it for GlobalAveragePool): each channel's sum of (x - x_zero_point)
// over its image in int32, times x_scale / (y_scale * image size) in float,
// rounded half to even, offset by y's zero point and saturated, as ONNX
// Runtime requantizes it.
//
// Inputs: X, x_scale, x_zero_point, y_scale, y_zero_point (one value each);
// attribute channels_last (0: [N, C, spatial...], 1: [N, spatial..., C]).
#include <algorithm>
#include <cmath>

#include "ops/qlinear_global_average_pool.h"
#include "ops/registry.h"

namespace kestrel::ops {
namespace {

template <typename Q>
void pool(KernelContext& ctx, const Q* x, Q* y, const QGlobalPool& g, bool channels_last, QParam xp, QParam yp) {
  const int64_t C = g.C, image = g.image;
  const float scale = g.multiplier;
  const float lo = float(std::numeric_limits<Q>::lowest()), hi = float(std::numeric_limits<Q>::max());
  parallel_for(ctx, g.N * C, 16, [&](int64_t p) {
    const int64_t n = p / C, c = p % C;
    const Q* xs = channels_last ? x + n * image * C + c : x + p * image;
    const int64_t step = channels_last ? C : 1;
    int32_t sum = 0;
    for (int64_t i = 0; i < image; ++i) sum += int32_t(xs[i * step]);
    sum -= xp.zero_point * int32_t(image);
    const float v = std::nearbyint(float(sum) * scale) + float(yp.zero_point);
    y[p] = std::isnan(v) ? Q(0) : Q(std::clamp(v, lo, hi));  // (a NaN scale: 0, as QuantizeLinear gives)
  });
}

void run_qlinear_global_average_pool(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const bool channels_last = ctx.node.attr_i("channels_last", 0) != 0;
  const QParam xp = qparam(ctx, 1, 2, X.dtype(), "x");
  const QParam yp = qparam(ctx, 3, 4, X.dtype(), "y");
  QGlobalPool g;
  if (std::string e = plan_qlinear_global_pool(X.shape(), channels_last, xp, yp, g); !e.empty()) ctx.fail(e);
  Tensor& Y = ctx.output(0, X.dtype(), g.out);
  if (Y.numel() == 0) return;
  if (X.dtype() == DType::Int8)
    pool(ctx, X.data<int8_t>(), Y.data<int8_t>(), g, channels_last, xp, yp);
  else
    pool(ctx, X.data<uint8_t>(), Y.data<uint8_t>(), g, channels_last, xp, yp);
}

}  // namespace

KESTREL_OP(QLinearGlobalAveragePool, {.domain = "com.microsoft", .run = run_qlinear_global_average_pool});

}  // namespace kestrel::ops

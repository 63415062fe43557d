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

#include "ops/qlinear_params.h"
#include "ops/registry.h"

namespace kestrel::ops {
namespace {

template <typename Q>
void pool(KernelContext& ctx, const Q* x, Q* y, int64_t N, int64_t C, int64_t image, bool channels_last, QParam xp,
          QParam yp) {
  const float scale = xp.scale / (yp.scale * float(image));
  const float lo = float(std::numeric_limits<Q>::lowest()), hi = float(std::numeric_limits<Q>::max());
  parallel_for(ctx, N * C, 16, [&](int64_t p) {
    const int64_t n = p / C, c = p % C;
    const Q* xs = channels_last ? x + n * image * C + c : x + p * image;
    const int64_t step = channels_last ? C : 1;
    int32_t sum = 0;
    for (int64_t i = 0; i < image; ++i) sum += int32_t(xs[i * step]);
    sum -= xp.zero_point * int32_t(image);
    const float v = std::nearbyint(float(sum) * scale) + float(yp.zero_point);
    y[p] = Q(std::clamp(v, lo, hi));
  });
}

void run_qlinear_global_average_pool(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.rank() < 3) ctx.fail("X must have rank 3 or more, got ", shape_str(X.shape()));
  const bool channels_last = ctx.node.attr_i("channels_last", 0) != 0;
  const QParam xp = qparam(ctx, 1, 2, X.dtype(), "x");
  const QParam yp = qparam(ctx, 3, 4, X.dtype(), "y");
  Shape out = X.shape();
  const size_t first = channels_last ? 1 : 2, end = first + (out.size() - 2);
  int64_t image = 1;
  for (size_t d = first; d < end; ++d) image *= out[d], out[d] = 1;
  const int64_t N = X.dim(0), C = channels_last ? X.shape().back() : X.dim(1);
  if (image >= (int64_t(1) << 23)) ctx.fail("an image of ", image, " values is past the int32 sum of 8-bit values");
  Tensor& Y = ctx.output(0, X.dtype(), out);
  if (Y.numel() == 0) return;
  if (X.dtype() == DType::Int8)
    pool(ctx, X.data<int8_t>(), Y.data<int8_t>(), N, C, image, channels_last, xp, yp);
  else
    pool(ctx, X.data<uint8_t>(), Y.data<uint8_t>(), N, C, image, channels_last, xp, yp);
}

}  // namespace

KESTREL_OP(QLinearGlobalAveragePool, {.domain = "com.microsoft", .run = run_qlinear_global_average_pool});

}  // namespace kestrel::ops

// LRN: local response normalization across channels,
// y = x / (bias + alpha / size * sum of x^2 over a window of `size` channels)^beta.
#include <cmath>

#include "ops/common.h"

namespace kestrel::ops {
namespace {

void run_lrn(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const ir::Node& n = ctx.node;
  if (X.dtype() != DType::Float32) ctx.fail("supports float only, got ", dtype_name(X.dtype()));
  if (X.rank() < 3) ctx.fail("input must be N x C x spatial..., got ", shape_str(X.shape()));
  const int64_t size = n.attr_i("size", 0);
  if (size < 1) ctx.fail("size must be a positive integer, got ", size);
  const float alpha = n.attr_f("alpha", 1e-4f), beta = n.attr_f("beta", 0.75f), bias = n.attr_f("bias", 1.f);
  const int64_t N = X.dim(0), C = X.dim(1), S = X.numel() / std::max<int64_t>(1, N * C);
  // Channels c - floor((size-1)/2) .. c + ceil((size-1)/2), clipped to the input.
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  Tensor& Y = ctx.output(0, DType::Float32, X.shape());
  const float* x = X.data<float>();
  float* y = Y.data<float>();
  const float a = alpha / float(size);
  parallel_for(ctx, N * C, 4, [&](int64_t p) {
    int64_t b = p / C, c = p % C;
    int64_t c0 = std::max<int64_t>(0, c - lo), c1 = std::min(C - 1, c + hi);
    const float* xc = x + p * S;
    float* yc = y + p * S;
    for (int64_t s = 0; s < S; ++s) {
      float sum = 0.f;
      for (int64_t k = c0; k <= c1; ++k) {
        float v = x[(b * C + k) * S + s];
        sum += v * v;
      }
      yc[s] = xc[s] / std::pow(bias + a * sum, beta);
    }
  });
}

}  // namespace

KESTREL_OP(LRN, {.min_opset = 1, .run = run_lrn});

}  // namespace kestrel::ops

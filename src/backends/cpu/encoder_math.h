// Pieces both fused encoder kernels on the CPU use: LayerNorm over rows,
// the MLP activations by name, and a projection with bias and activation.
#pragma once
#include <cmath>
#include <string>

#include "ops/common.h"
#include "ops/gemm_util.h"

namespace kestrel::backends::cpu {

enum class EncoderAct { None, GeluErf, GeluTanh, QuickGelu, Silu, Relu };

// The activation a fused node names (families::activation_name).
inline EncoderAct encoder_act(const ops::KernelContext& ctx, const std::string& a) {
  if (a == "gelu") return EncoderAct::GeluErf;
  if (a == "gelu_tanh") return EncoderAct::GeluTanh;
  if (a == "quick_gelu") return EncoderAct::QuickGelu;
  if (a == "silu") return EncoderAct::Silu;
  if (a == "relu") return EncoderAct::Relu;
  ctx.fail("unknown activation '", a, "'");
}

inline float activate(EncoderAct act, float v) {
  switch (act) {
    case EncoderAct::GeluErf: return 0.5f * v * (1.f + std::erf(v * float(M_SQRT1_2)));
    case EncoderAct::GeluTanh: return 0.5f * v * (1.f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    case EncoderAct::QuickGelu: return v / (1.f + std::exp(-1.702f * v));
    case EncoderAct::Silu: return v / (1.f + std::exp(-v));
    case EncoderAct::Relu: return v > 0 ? v : 0.f;
    case EncoderAct::None: break;
  }
  return v;
}

// y = LayerNorm(x) * g (+ b) over rows of d; mean and variance in double.
inline void layer_norm_rows(const ops::KernelContext& ctx, const float* x, float* y, int64_t rows, int64_t d,
                            const float* g, const float* b, float eps) {
  ops::parallel_for(ctx, rows, 8, [&](int64_t r) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mean += xr[i];
    mean /= double(d);
    for (int64_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const double inv = 1.0 / std::sqrt(var / double(d) + eps);
    for (int64_t i = 0; i < d; ++i) yr[i] = float((xr[i] - mean) * inv) * g[i] + (b ? b[i] : 0.f);
  });
}

// x += o over rows of d (the residual stream).
inline void add_residual(const ops::KernelContext& ctx, float* x, const float* o, int64_t rows, int64_t d) {
  ops::parallel_for(ctx, rows, 8, [&](int64_t r) {
    for (int64_t i = 0; i < d; ++i) x[r * d + i] += o[r * d + i];
  });
}

// y[rows, n] (row stride ldy) = act(x[rows, k] w[k, n] + bias); bias may be null.
inline void project(const ops::KernelContext& ctx, const float* x, int64_t rows, int64_t k, const float* w,
                    const float* bias, int64_t n, float* y, int64_t ldy, EncoderAct act = EncoderAct::None) {
  ops::sgemm(ctx, false, false, rows, n, k, 1.f, x, k, w, n, 0.f, y, ldy);
  if (!bias && act == EncoderAct::None) return;
  ops::parallel_for(ctx, rows, 8, [&](int64_t r) {
    float* yr = y + r * ldy;
    for (int64_t j = 0; j < n; ++j) yr[j] = activate(act, yr[j] + (bias ? bias[j] : 0.f));
  });
}

}  // namespace kestrel::backends::cpu

// MaxPool (with Indices), AveragePool, LpPool and their Global forms, and
// MaxPoolChannelsLast (the CPU backend's layout pass writes it).
// Windows of rank 1..3 are handled as 3-D with leading unit dims, one
// (batch, channel) plane per parallel task.
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/conv_util.h"
#include "ops/qlinear_params.h"

namespace kestrel::ops {
namespace {

// A window geometry widened to exactly 3 spatial dims.
struct Geom3 {
  int64_t in[3], k[3], out[3], s[3], d[3], pb[3], pe[3];
};

Geom3 widen3(const KernelContext& ctx, const WindowGeom& g) {
  if (g.nd < 1 || g.nd > 3) ctx.fail("pooling supports 1 to 3 spatial dims, got ", g.nd);
  Geom3 r;
  int lead = 3 - g.nd;
  for (int i = 0; i < 3; ++i) {
    bool real = i >= lead;
    size_t j = size_t(i - lead);
    r.in[i] = real ? g.in[j] : 1;
    r.k[i] = real ? g.kernel[j] : 1;
    r.out[i] = real ? g.out[j] : 1;
    r.s[i] = real ? g.stride[j] : 1;
    r.d[i] = real ? g.dil[j] : 1;
    r.pb[i] = real ? g.pad_begin[j] : 0;
    r.pe[i] = real ? g.pad_end[j] : 0;
  }
  return r;
}

struct PoolSetup {
  WindowGeom g;
  Geom3 g3;
  int64_t planes, IS, OS;
  Shape out;
};

PoolSetup setup(const KernelContext& ctx, const Tensor& X, bool allow_ceil) {
  if (X.rank() < 3) ctx.fail("input must be N x C x spatial..., got ", shape_str(X.shape()));
  std::vector<int64_t> kernel = ctx.node.attr_ints("kernel_shape");
  if (kernel.empty()) ctx.fail("kernel_shape attribute is required");
  bool ceil_mode = allow_ceil && ctx.node.attr_i("ceil_mode", 0) != 0;
  PoolSetup p;
  p.g = window_geom(ctx, spatial_dims(X.shape()), kernel, ceil_mode);
  p.g3 = widen3(ctx, p.g);
  p.planes = X.dim(0) * X.dim(1);
  p.IS = p.g.in_size();
  p.OS = p.g.out_size();
  p.out = {X.dim(0), X.dim(1)};
  p.out.insert(p.out.end(), p.g.out.begin(), p.g.out.end());
  return p;
}

// Calls f(input_offset, d, h, w) for every in-bounds tap of output position (od, oh, ow).
template <typename F>
inline void for_window(const Geom3& g, int64_t od, int64_t oh, int64_t ow, F&& f) {
  for (int64_t kd = 0; kd < g.k[0]; ++kd) {
    int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
    if (id < 0 || id >= g.in[0]) continue;
    for (int64_t kh = 0; kh < g.k[1]; ++kh) {
      int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
      if (ih < 0 || ih >= g.in[1]) continue;
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
        if (iw < 0 || iw >= g.in[2]) continue;
        f((id * g.in[1] + ih) * g.in[2] + iw, id, ih, iw);
      }
    }
  }
}

// Taps of the window inside the padded input (what count_include_pad divides by).
int64_t padded_count(const Geom3& g, int64_t od, int64_t oh, int64_t ow) {
  int64_t o[3] = {od, oh, ow}, n = 1;
  for (int i = 0; i < 3; ++i) {
    int64_t c = 0;
    for (int64_t k = 0; k < g.k[i]; ++k) {
      int64_t x = o[i] * g.s[i] - g.pb[i] + k * g.d[i];
      c += x >= -g.pb[i] && x < g.in[i] + g.pe[i];
    }
    n *= c;
  }
  return n;
}

// Runs body(plane, od, oh, ow, out_index) over every output element.
template <typename F>
void for_outputs(const KernelContext& ctx, const PoolSetup& p, F&& body) {
  const Geom3& g = p.g3;
  parallel_for(ctx, p.planes, 1, [&](int64_t pl) {
    int64_t o = pl * p.OS;
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow) body(pl, od, oh, ow, o++);
  });
}

template <typename T>
void max_pool(KernelContext& ctx, const PoolSetup& p) {
  const Tensor& X = ctx.input(0);
  const T* x = X.data<T>();
  T* y = ctx.output(0, X.dtype(), p.out).template data<T>();
  bool want_idx = ctx.wants_output(1);
  int64_t* ind = want_idx ? ctx.output(1, DType::Int64, p.out).data<int64_t>() : nullptr;
  bool col_major = ctx.node.attr_i("storage_order", 0) != 0;
  const Geom3& g = p.g3;
  for_outputs(ctx, p, [&](int64_t pl, int64_t od, int64_t oh, int64_t ow, int64_t o) {
    const T* xp = x + pl * p.IS;
    T best = std::numeric_limits<T>::lowest();
    if constexpr (std::numeric_limits<T>::has_infinity) best = -std::numeric_limits<T>::infinity();
    int64_t arg = -1, ad = 0, ah = 0, aw = 0;
    for_window(g, od, oh, ow, [&](int64_t off, int64_t id, int64_t ih, int64_t iw) {
      if (arg < 0 || xp[off] > best) best = xp[off], arg = off, ad = id, ah = ih, aw = iw;
    });
    y[o] = best;
    if (ind) {
      // Column-major indices reverse the spatial strides (W slowest).
      int64_t local = col_major ? (aw * g.in[1] + ah) * g.in[0] + ad : arg;
      ind[o] = pl * p.IS + (arg < 0 ? 0 : local);
    }
  });
}

// The common case (float, no Indices output, no dilation) without the
// generic per-tap callbacks: each output's in-bounds tap ranges are computed
// once and scanned directly. Same tie and NaN rule as max_pool: the first
// in-bounds tap starts the maximum, later taps replace it only when greater.
void max_pool_float_fast(KernelContext& ctx, const PoolSetup& p) {
  const Tensor& X = ctx.input(0);
  const float* x = X.data<float>();
  float* y = ctx.output(0, DType::Float32, p.out).data<float>();
  const Geom3& g = p.g3;
  // One task per output row, so a single large plane still spreads over threads.
  parallel_for(ctx, p.planes * g.out[0] * g.out[1], 8, [&](int64_t t) {
    int64_t oh = t % g.out[1], od = (t / g.out[1]) % g.out[0], pl = t / (g.out[1] * g.out[0]);
    const float* xp = x + pl * p.IS;
    float* yp = y + pl * p.OS + od * g.out[1] * g.out[2];
    int64_t d0 = std::max<int64_t>(0, g.pb[0] - od * g.s[0]), d1 = std::min(g.k[0], g.in[0] - od * g.s[0] + g.pb[0]);
    int64_t ih0 = oh * g.s[1] - g.pb[1];
    int64_t h0 = std::max<int64_t>(0, -ih0), h1 = std::min(g.k[1], g.in[1] - ih0);
    for (int64_t ow = 0; ow < g.out[2]; ++ow) {
      int64_t iw0 = ow * g.s[2] - g.pb[2];
      int64_t w0 = std::max<int64_t>(0, -iw0), w1 = std::min(g.k[2], g.in[2] - iw0);
      float best = -std::numeric_limits<float>::infinity();
      bool first = true;
      for (int64_t kd = d0; kd < d1; ++kd) {
        const float* xd = xp + (od * g.s[0] - g.pb[0] + kd) * g.in[1] * g.in[2];
        for (int64_t kh = h0; kh < h1; ++kh) {
          const float* xr = xd + (ih0 + kh) * g.in[2] + iw0;
          for (int64_t kw = w0; kw < w1; ++kw) {
            float v = xr[kw];
            if (first || v > best) best = v, first = false;
          }
        }
      }
      yp[oh * g.out[2] + ow] = best;
    }
  });
}

// com.kestrel MaxPoolChannelsLast: MaxPool over a 2-D image held
// channels-last ([N, H, W, C] in, [N, oH, oW, C] out), written by the CPU
// backend's layout pass (backends/cpu/channels_last.h) where a chain of
// channels-last convolutions pools (YOLO's SPP, a stride-2 downsampling),
// so the chain does not leave the layout there. MaxPool's attributes; no
// Indices output. Its own loop of MaxPool's rule, tap by tap (the first
// in-bounds tap starts the maximum, a later one replaces it only when
// greater; a window of padding alone gives -inf): the oracle for the
// backend's vectorized kernel (backends/cpu/pool.cpp).
void run_max_pool_channels_last(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.rank() != 4) ctx.fail("takes a 2-D image [N, H, W, C], got ", shape_str(X.shape()));
  if (X.dtype() != DType::Float32) ctx.fail("supports float32 only, got ", dtype_name(X.dtype()));
  if (ctx.node.outputs.size() > 1) ctx.fail("has no Indices output");
  const std::vector<int64_t> kernel = ctx.node.attr_ints("kernel_shape");
  if (kernel.size() != 2) ctx.fail("kernel_shape must have 2 values, got ", kernel.size());
  const int64_t N = X.dim(0), C = X.dim(3);
  const WindowGeom g = window_geom(ctx, {X.dim(1), X.dim(2)}, kernel, ctx.node.attr_i("ceil_mode", 0) != 0);
  const Window2D v(g);
  Tensor& Y = ctx.output(0, DType::Float32, {N, v.OH, v.OW, C});
  const float* x = X.data<float>();
  float* y = Y.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < v.OH; ++oh)
      for (int64_t ow = 0; ow < v.OW; ++ow)
        for (int64_t c = 0; c < C; ++c) {
          float best = -std::numeric_limits<float>::infinity();
          bool first = true;
          for (int64_t kh = 0; kh < v.KH; ++kh) {
            const int64_t ih = oh * v.SH - v.PH + kh * v.DH;
            if (ih < 0 || ih >= v.H) continue;
            for (int64_t kw = 0; kw < v.KW; ++kw) {
              const int64_t iw = ow * v.SW - v.PW + kw * v.DW;
              if (iw < 0 || iw >= v.W) continue;
              const float t = x[((n * v.H + ih) * v.W + iw) * C + c];
              if (first || t > best) best = t, first = false;
            }
          }
          y[((n * v.OH + oh) * v.OW + ow) * C + c] = best;
        }
}

void run_max_pool(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  PoolSetup p = setup(ctx, X, true);
  const Geom3& g = p.g3;
  if (X.dtype() == DType::Float32 && !ctx.wants_output(1) && g.d[0] == 1 && g.d[1] == 1 && g.d[2] == 1)
    return max_pool_float_fast(ctx, p);
  switch (X.dtype()) {
    case DType::Float32: return max_pool<float>(ctx, p);
    case DType::Float64: return max_pool<double>(ctx, p);
    case DType::Int8: return max_pool<int8_t>(ctx, p);
    case DType::UInt8: return max_pool<uint8_t>(ctx, p);
    default: ctx.fail("element type ", dtype_name(X.dtype()), " is not supported");
  }
}

template <typename T>
void avg_or_lp_pool(KernelContext& ctx, const PoolSetup& p, bool lp) {
  const Tensor& X = ctx.input(0);
  const T* x = X.data<T>();
  T* y = ctx.output(0, X.dtype(), p.out).template data<T>();
  bool include_pad = ctx.node.attr_i("count_include_pad", 0) != 0;
  double pw = double(ctx.node.attr_i("p", 2));
  const Geom3& g = p.g3;
  for_outputs(ctx, p, [&](int64_t pl, int64_t od, int64_t oh, int64_t ow, int64_t o) {
    const T* xp = x + pl * p.IS;
    double acc = 0;
    int64_t n = 0;
    if (lp) {
      for_window(g, od, oh, ow, [&](int64_t off, int64_t, int64_t, int64_t) { acc += std::pow(std::fabs(double(xp[off])), pw); });
      y[o] = T(std::pow(acc, 1.0 / pw));
      return;
    }
    for_window(g, od, oh, ow, [&](int64_t off, int64_t, int64_t, int64_t) { acc += double(xp[off]), ++n; });
    if (include_pad) n = padded_count(g, od, oh, ow);
    y[o] = n ? T(acc / double(n)) : T(0);
  });
}

void run_avg_pool_kind(KernelContext& ctx, bool lp) {
  const Tensor& X = ctx.input(0);
  PoolSetup p = setup(ctx, X, true);
  switch (X.dtype()) {
    case DType::Float32: return avg_or_lp_pool<float>(ctx, p, lp);
    case DType::Float64: return avg_or_lp_pool<double>(ctx, p, lp);
    default: ctx.fail("element type ", dtype_name(X.dtype()), " is not supported");
  }
}

void run_average_pool(KernelContext& ctx) { run_avg_pool_kind(ctx, false); }

// com.microsoft QLinearAveragePool (ONNX Runtime's quantization tools write
// it for AveragePool), as ONNX Runtime computes it: each tap dequantized
// (x_scale * (x - x_zero_point)) and summed in float, divided by the taps
// counted as AveragePool counts them, quantized as QuantizeLinear does.
// Inputs: X, x_scale, x_zero_point, y_scale, y_zero_point (one value each).
void run_qlinear_average_pool(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (ctx.node.attr_i("channels_last", 0) != 0) ctx.fail("channels_last = 1 is not supported");
  const QParam xp = qparam(ctx, 1, 2, X.dtype(), "x");
  const QParam yp = qparam(ctx, 3, 4, X.dtype(), "y");
  const PoolSetup p = setup(ctx, X, true);
  const bool include_pad = ctx.node.attr_i("count_include_pad", 0) != 0;
  const bool s8 = X.dtype() == DType::Int8;
  const uint8_t* x = X.raw();
  std::vector<float> real(size_t(shape_numel(p.out)));
  for_outputs(ctx, p, [&](int64_t pl, int64_t od, int64_t oh, int64_t ow, int64_t o) {
    const uint8_t* xp_ = x + pl * p.IS;
    float acc = 0;
    int64_t n = 0;
    for_window(p.g3, od, oh, ow, [&](int64_t off, int64_t, int64_t, int64_t) {
      const int32_t q = s8 ? int32_t(int8_t(xp_[off])) : int32_t(xp_[off]);
      acc += xp.scale * float(q - xp.zero_point), ++n;
    });
    if (include_pad) n = padded_count(p.g3, od, oh, ow);
    real[size_t(o)] = n ? acc / float(n) : 0.0f;
  });
  Tensor& Y = ctx.output(0, X.dtype(), p.out);
  if (s8) quantize_floats(real.data(), yp.scale, yp.zero_point, Y.data<int8_t>(), Y.numel());
  else quantize_floats(real.data(), yp.scale, yp.zero_point, Y.data<uint8_t>(), Y.numel());
}
void run_lp_pool(KernelContext& ctx) { run_avg_pool_kind(ctx, true); }

enum class Global { Avg, Max, Lp };

template <typename T>
void global_pool(KernelContext& ctx, Global kind) {
  const Tensor& X = ctx.input(0);
  if (X.rank() < 3) ctx.fail("input must be N x C x spatial..., got ", shape_str(X.shape()));
  Shape out{X.dim(0), X.dim(1)};
  out.resize(size_t(X.rank()), 1);
  int64_t planes = X.dim(0) * X.dim(1), IS = X.numel() / std::max<int64_t>(planes, 1);
  const T* x = X.data<T>();
  T* y = ctx.output(0, X.dtype(), out).template data<T>();
  if (kind == Global::Max && IS == 0) ctx.fail("GlobalMaxPool over an empty spatial extent ", shape_str(X.shape()));
  double pw = double(ctx.node.attr_i("p", 2));
  parallel_for(ctx, planes, 4, [&](int64_t pl) {
    const T* xp = x + pl * IS;
    if (kind == Global::Max) {
      T m = xp[0];
      for (int64_t i = 1; i < IS; ++i) m = xp[i] > m || std::isnan(double(xp[i])) ? xp[i] : m;
      y[pl] = m;
    } else if (kind == Global::Avg) {
      double s = 0;  // planes can hold a million values: float sums would drift
#pragma omp simd reduction(+ : s)
      for (int64_t i = 0; i < IS; ++i) s += double(xp[i]);
      y[pl] = IS ? T(s / double(IS)) : T(0);
    } else {
      double s = 0;
      for (int64_t i = 0; i < IS; ++i) s += std::pow(std::fabs(double(xp[i])), pw);
      y[pl] = T(std::pow(s, 1.0 / pw));
    }
  });
}

void run_global(KernelContext& ctx, Global kind) {
  switch (ctx.input(0).dtype()) {
    case DType::Float32: return global_pool<float>(ctx, kind);
    case DType::Float64: return global_pool<double>(ctx, kind);
    default: ctx.fail("element type ", dtype_name(ctx.input(0).dtype()), " is not supported");
  }
}

void run_global_average_pool(KernelContext& ctx) { run_global(ctx, Global::Avg); }
void run_global_max_pool(KernelContext& ctx) { run_global(ctx, Global::Max); }
void run_global_lp_pool(KernelContext& ctx) { run_global(ctx, Global::Lp); }

}  // namespace

KESTREL_OP(MaxPool, {.min_opset = 1, .run = run_max_pool});
KESTREL_OP(MaxPoolChannelsLast, {.domain = "com.kestrel", .run = run_max_pool_channels_last});
KESTREL_OP(AveragePool, {.min_opset = 1, .run = run_average_pool});
KESTREL_OP(QLinearAveragePool, {.domain = "com.microsoft", .run = run_qlinear_average_pool});
KESTREL_OP(LpPool, {.min_opset = 1, .run = run_lp_pool});
KESTREL_OP(GlobalAveragePool, {.min_opset = 1, .run = run_global_average_pool});
KESTREL_OP(GlobalMaxPool, {.min_opset = 1, .run = run_global_max_pool});
KESTREL_OP(GlobalLpPool, {.min_opset = 2, .run = run_global_lp_pool});

}  // namespace kestrel::ops

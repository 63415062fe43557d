#include "quantize/quant_params.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kestrel::quantize {

ActivationParams activation_params(Range r) {
  const float lo = std::min(r.lo, 0.0f), hi = std::max(r.hi, 0.0f);
  ActivationParams p;
  if (!(hi > lo)) return p;  // all zeros (or NaN): any scale represents them
  p.scale = (hi - lo) / 255.0f;
  const float zp = std::nearbyint(-lo / p.scale);
  p.zero_point = uint8_t(std::clamp(zp, 0.0f, 255.0f));
  return p;
}

QuantizedWeight quantize_weight(const Tensor& w, int axis, int limit) {
  KESTREL_CHECK(w.dtype() == DType::Float32, "only float32 weights are quantized, got ", dtype_name(w.dtype()));
  KESTREL_CHECK(axis < w.rank(), "channel axis ", axis, " of a rank-", w.rank(), " weight");
  QuantizedWeight out;
  out.axis = axis;
  out.q = Tensor(DType::Int8, w.shape());
  const int64_t channels = axis < 0 ? 1 : w.dim(axis);
  int64_t inner = 1;
  for (int d = axis + 1; d < w.rank() && axis >= 0; ++d) inner *= w.dim(d);
  if (axis < 0) inner = w.numel();
  const float* src = w.data<float>();
  int8_t* dst = out.q.data<int8_t>();
  // Element i belongs to channel (i / inner) % channels.
  std::vector<float> absmax(size_t(channels), 0.0f);
  for (int64_t i = 0; i < w.numel(); ++i) {
    const size_t c = size_t((i / inner) % channels);
    absmax[c] = std::max(absmax[c], std::fabs(src[i]));
  }
  out.scales.resize(size_t(channels));
  const float top = float(limit);
  for (size_t c = 0; c < absmax.size(); ++c) out.scales[c] = absmax[c] > 0 ? absmax[c] / top : 1.0f;
  for (int64_t i = 0; i < w.numel(); ++i) {
    const float v = std::nearbyint(src[i] / out.scales[size_t((i / inner) % channels)]);
    dst[i] = int8_t(std::clamp(v, -top, top));
  }
  return out;
}

Range percentile_range(std::vector<float>& sample, double tail) {
  if (sample.empty()) return {};
  const size_t n = sample.size();
  const size_t k_lo = size_t(std::floor(tail * double(n - 1))), k_hi = n - 1 - k_lo;
  std::nth_element(sample.begin(), sample.begin() + ptrdiff_t(k_lo), sample.end());
  const float lo = sample[k_lo];
  std::nth_element(sample.begin(), sample.begin() + ptrdiff_t(k_hi), sample.end());
  return {lo, sample[k_hi]};
}

namespace {

// KL(p || q) over the bins where p has mass; where q has none (the last bin
// holding only the folded tail) it counts as 1e-10 of q's mass.
double kl_divergence(const std::vector<double>& p, const std::vector<double>& q) {
  double sp = 0, sq = 0;
  for (size_t i = 0; i < p.size(); ++i) sp += p[i], sq += q[i];
  if (!(sq > 0)) return INFINITY;
  double d = 0;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0) d += (p[i] / sp) * std::log((p[i] / sp) / std::max(q[i] / sq, 1e-10));
  return d;
}

}  // namespace

Range entropy_range(const std::vector<float>& sample, Range minmax) {
  constexpr int kBins = 2048;
  float amax = std::max(std::fabs(minmax.lo), std::fabs(minmax.hi));
  if (sample.empty() || !(amax > 0)) return minmax;
  const int levels = minmax.lo >= 0 ? 256 : 128;
  std::vector<double> hist(kBins, 0.0);
  const double width = double(amax) / kBins;
  for (float v : sample) hist[size_t(std::min(kBins - 1, int(std::fabs(v) / width)))] += 1;
  int best_i = kBins;
  double best = INFINITY;
  std::vector<double> p, q;
  for (int i = levels; i <= kBins; ++i) {
    // p: the first i bins, the rest folded into the last.
    p.assign(hist.begin(), hist.begin() + i);
    for (int j = i; j < kBins; ++j) p[size_t(i - 1)] += hist[size_t(j)];
    // q: the first i bins as `levels` quantized bins would hold them (without
    // the folded tail, which is what clipping loses): each group's mass
    // spread evenly over its non-empty bins.
    q.assign(size_t(i), 0.0);
    for (int g = 0; g < levels; ++g) {
      const int a = int(int64_t(g) * i / levels), b = int(int64_t(g + 1) * i / levels);
      double mass = 0;
      int nonzero = 0;
      for (int j = a; j < b; ++j) mass += hist[size_t(j)], nonzero += hist[size_t(j)] > 0;
      for (int j = a; j < b; ++j)
        if (hist[size_t(j)] > 0) q[size_t(j)] = mass / nonzero;
    }
    const double d = kl_divergence(p, q);
    if (d < best) best = d, best_i = i;
  }
  const float t = float((best_i + 0.5) * width);
  return {std::max(minmax.lo, -t), std::min(minmax.hi, t)};
}

Int4Blocks quantize_int4_blocks(const Tensor& w, int64_t block) {
  const int64_t K = w.dim(0), N = w.dim(1), blocks = (K + block - 1) / block;
  const std::vector<float> v = w.to_f32();
  Int4Blocks r;
  r.packed = Tensor(DType::UInt8, {N, blocks, block / 2});
  uint8_t* out = r.packed.data<uint8_t>();
  std::fill(out, out + r.packed.numel(), uint8_t(0x88));  // (padding: zeros)
  r.scales.assign(size_t(N * blocks), 0.f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t k0 = b * block, k1 = std::min(K, k0 + block);
      float amax = 0;
      for (int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(v[size_t(k * N + n)]));
      const float scale = amax / 7.f;
      r.scales[size_t(n * blocks + b)] = scale;
      uint8_t* bytes = out + (n * blocks + b) * (block / 2);
      for (int64_t k = k0; k < k1; ++k) {
        const float q = scale > 0 ? std::nearbyint(v[size_t(k * N + n)] / scale) : 0.f;
        const uint8_t nibble = uint8_t(int(std::clamp(q, -7.f, 7.f)) + 8);
        const int64_t j = k - k0;
        bytes[j / 2] = uint8_t(j % 2 ? (bytes[j / 2] & 0x0F) | (nibble << 4) : (bytes[j / 2] & 0xF0) | nibble);
      }
    }
  return r;
}

}  // namespace kestrel::quantize

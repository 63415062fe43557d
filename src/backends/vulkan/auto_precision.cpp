#include "backends/vulkan/auto_precision.h"

#include <chrono>
#include <cmath>
#include <cstdio>

namespace kestrel::vulkan {
namespace {

constexpr double kMinCosine = 0.9995, kMaxAbsOfRange = 3e-2;

// "" when b agrees with a (the float32 result), else what disagrees.
std::string disagreement(const Tensor& a, const Tensor& b, double& worst_cos) {
  if (!dtype_is_float(a.dtype())) return a.same_as(b) ? "" : "an integer output differs";
  std::vector<float> x = a.to_f32(), y = b.to_f32();
  double dot = 0, nx = 0, ny = 0, maxabs = 0, range = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) != std::isnan(y[i])) return "NaN where float32 has none";
    if (std::isnan(x[i])) continue;
    dot += double(x[i]) * y[i];
    nx += double(x[i]) * x[i];
    ny += double(y[i]) * y[i];
    maxabs = std::max(maxabs, std::abs(double(x[i]) - y[i]));
    range = std::max(range, std::abs(double(x[i])));
  }
  double cos = nx == 0 && ny == 0 ? 1 : dot / std::sqrt(nx * ny + 1e-300);
  worst_cos = std::min(worst_cos, cos);
  char buf[128];
  if (cos < kMinCosine || maxabs > kMaxAbsOfRange * range + 1e-6) {
    std::snprintf(buf, sizeof buf, "cosine %.6f, max abs %.3g of %.3g", cos, maxabs, range);
    return buf;
  }
  return "";
}

double time_run(const backends::CompiledGraph& g, const std::vector<Tensor>& inputs, const backends::RunOptions& opts) {
  auto t0 = std::chrono::steady_clock::now();
  g.run(inputs, opts);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

AutoPrecisionCompiled::AutoPrecisionCompiled(std::unique_ptr<backends::CompiledGraph> fp32,
                                             std::unique_ptr<backends::CompiledGraph> fp16)
    : fp32_(std::move(fp32)), fp16_(std::move(fp16)) {}

std::vector<Tensor> AutoPrecisionCompiled::run(const std::vector<Tensor>& inputs,
                                               const backends::RunOptions& given) const {
  // One ledger for both precisions: a claim checked in the float32 run holds for the float16 one.
  const backends::RunOptions opts = with_checks(given);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!chosen_) {
      std::vector<Tensor> ref = fp32_->run(inputs, opts), half = fp16_->run(inputs, opts);
      std::string why;
      double worst = 1;
      for (size_t i = 0; i < ref.size() && why.empty(); ++i) {
        why = disagreement(ref[i], half[i], worst);
        if (!why.empty()) why = "output " + std::to_string(i) + ": " + why;
      }
      char buf[160];
      if (why.empty()) {
        // Both are faithful: keep the faster, timed on one more (warm) run each.
        double t32 = time_run(*fp32_, inputs, opts), t16 = time_run(*fp16_, inputs, opts);
        std::snprintf(buf, sizeof buf, "agreed with fp32 on the first run, worst cosine %.6f; warm run fp32 %.3f ms, fp16 %.3f ms",
                      worst, t32, t16);
        bool half = t16 < t32;
        verdict_ = std::string("precision auto: ") + (half ? "fp16" : "fp32") + " (fp16 " + buf + ")";
        chosen_ = half ? fp16_.get() : fp32_.get();
        (half ? fp32_ : fp16_).reset();
      } else {
        verdict_ = "precision auto: fp32 (fp16 disagreed on the first run: " + why + ")";
        chosen_ = fp32_.get();
        fp16_.reset();
      }
      return ref;
    }
  }
  return chosen_->run(inputs, opts);
}

std::optional<backends::PlacementReport> AutoPrecisionCompiled::placement() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!chosen_) return fp32_->placement();
  auto p = chosen_->placement();
  if (p) p->precision_note = verdict_;
  return p;
}

std::optional<backends::PlacementReport> AutoPrecisionCompiled::planned_placement() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (chosen_) {
    auto p = chosen_->planned_placement();
    if (p) p->precision_note = verdict_;
    return p;
  }
  auto p = fp32_->planned_placement();
  if (p) p->precision_note = "precision auto: the first run computes in fp32 and fp16 and keeps fp16 only if it "
                             "agrees and is faster (shown for fp32)";
  return p;
}

}  // namespace kestrel::vulkan

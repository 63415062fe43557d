#include "backends/vulkan/auto_precision.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace kestrel::vulkan {
namespace {

double time_run(const backends::CompiledGraph& g, const std::vector<Tensor>& inputs, const backends::RunOptions& opts) {
  auto t0 = std::chrono::steady_clock::now();
  g.run(inputs, opts);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

AutoPrecisionCompiled::AutoPrecisionCompiled(std::unique_ptr<backends::CompiledGraph> fp32,
                                             std::unique_ptr<VulkanCompiled> fp16)
    : fp32_(std::move(fp32)), fp16_(std::move(fp16)) {}

std::vector<Tensor> AutoPrecisionCompiled::run(const std::vector<Tensor>& inputs,
                                               const backends::RunOptions& given) const {
  // One ledger for both precisions: a claim checked in the float32 run holds for the float16 one.
  const backends::RunOptions opts = with_checks(given);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!chosen_) {
      std::vector<Tensor> ref = fp32_->run(inputs, opts);
      fp16_->run(inputs, opts);  // calibrates its per-node precisions (precision_plan.h)
      std::shared_ptr<const PrecisionPlan> plan = fp16_->precision();
      std::string why;
      double worst = 1;
      if (!plan->decided) {
        why = "it could not calibrate on the first run";
      } else if (plan->half_nodes() == 0) {
        why = "no node kept fp16";
      } else {
        std::vector<Tensor> half = fp16_->run(inputs, opts);
        for (size_t i = 0; i < ref.size() && why.empty(); ++i) {
          double cos = 1;
          why = output_disagreement(ref[i], half[i], &cos);
          worst = std::min(worst, cos);
          if (!why.empty()) why = "output " + std::to_string(i) + ": " + why;
        }
      }
      const std::string detail = plan->note.empty() ? "" : "\n" + plan->note;
      char buf[160];
      if (why.empty()) {
        // Both are faithful: keep the faster, timed on one more (warm) run each.
        double t32 = time_run(*fp32_, inputs, opts), t16 = time_run(*fp16_, inputs, opts);
        std::snprintf(buf, sizeof buf, "agreed with fp32 on the first run, worst cosine %.6f; warm run fp32 %.3f ms, fp16 %.3f ms",
                      worst, t32, t16);
        bool half = t16 < t32;
        verdict_ = std::string("precision auto: ") + (half ? "fp16" : "fp32") + " (fp16 " + buf + ")" + detail;
        chosen_ = half ? static_cast<const backends::CompiledGraph*>(fp16_.get()) : fp32_.get();
        if (half) fp32_.reset();
        else fp16_.reset();
      } else {
        verdict_ = "precision auto: fp32 (fp16 on the first run: " + why + ")" + detail;
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
  if (p) p->precision_note = "precision auto: the first run computes in fp32, calibrates which nodes keep fp16, and "
                             "keeps fp16 only if it agrees and is faster (shown for fp32)";
  return p;
}

}  // namespace kestrel::vulkan

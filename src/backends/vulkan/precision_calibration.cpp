// Float16 storage asked for: the first run decides which nodes keep it
// (precision_plan.h says how), later runs follow that plan. The first run
// returns the answer of the mixed run that agreed with float32 (float32's
// own where no node keeps float16).
#include <atomic>
#include <cmath>

#include "backends/vulkan/graph_runner.h"
#include "backends/vulkan/run_state.h"
#include "backends/vulkan/transfer.h"

namespace kestrel::vulkan {
namespace {

// The first `k` lines of `lines`, then how many more.
std::string first_lines(const std::vector<std::string>& lines, size_t k) {
  std::string s;
  for (size_t i = 0; i < lines.size() && i < k; ++i) s += "\n  " + lines[i];
  if (lines.size() > k) s += "\n  ... and " + std::to_string(lines.size() - k) + " more";
  return s;
}

// Whether any of n values of `bits` (each value's exponent field is `exp`)
// is infinite or NaN: its exponent all ones. Branch-free so that the
// compiler vectorizes it, and split over threads for large outputs as the
// transfers are (in_blocks): every run of a float16 session asks, and a
// scalar loop with an early exit took milliseconds over a batch's
// [64, 197, 768] output.
template <class U> bool any_exponent_all_ones(const U* bits, int64_t n, U exp, int threads) {
  std::atomic<bool> found{false};
  in_blocks(n, int64_t(sizeof(U)), threads, [&](int64_t begin, int64_t end) {
    if (found.load(std::memory_order_relaxed)) return;  // (an earlier block had one)
    U any = 0;
    for (int64_t i = begin; i < end; ++i) any |= U((bits[i] & exp) == exp);
    if (any) found.store(true, std::memory_order_relaxed);
  });
  return found.load();
}

// Read in place (no float32 copy): every run of a float16 session asks.
bool any_non_finite(const std::vector<Tensor>& outs, int threads) {
  for (const Tensor& t : outs) {
    if (t.dtype() == DType::Float32 &&
        any_exponent_all_ones(t.data<uint32_t>(), t.numel(), uint32_t(0x7f800000u), threads))
      return true;
    if (t.dtype() == DType::Float16 && any_exponent_all_ones(t.data<uint16_t>(), t.numel(), uint16_t(0x7c00u), threads))
      return true;
  }
  return false;
}

// "" when every output of `got` agrees with float32's `ref`, else the first
// that does not and how.
std::string first_disagreement(const ir::Graph& g, const std::vector<Tensor>& ref, const std::vector<Tensor>& got) {
  for (size_t i = 0; i < ref.size(); ++i)
    if (std::string why = output_disagreement(ref[i], got[i]); !why.empty())
      return "output '" + g.values[size_t(g.outputs[i])].name + "': " + why;
  return "";
}

}  // namespace

void VulkanCompiled::sync_weights(const PrecisionPlan& plan) const {
  RunResources upload(*ctx_, device_wait_s_, budget_, exact_buffers_);
  std::vector<std::shared_ptr<DeviceMemory>> staging;
  upload_weights(upload, staging, plan);
  upload.rec.flush();
}

std::vector<Tensor> VulkanCompiled::calibrate(const std::vector<Tensor>& inputs,
                                              const backends::RunOptions& given) const {
  std::lock_guard<std::mutex> lock(calibrating_);
  if (std::shared_ptr<const PrecisionPlan> p = precision(); p->decided) return run_mixed(inputs, given, *p);
  // Each run's outputs are compared with the others': none is written into
  // the caller's tensors (OutputSink), where the next would overwrite it.
  backends::RunOptions opts = given;
  opts.output_sink = nullptr;

  // Float32 first, every value sampled. A run in which a node's placement
  // was of the moment (a fused encoder's first run at a shape is checked on
  // the CPU) is repeated: the plan needs what the settled graph computes.
  std::vector<ValueSample> fp32;
  std::vector<Tensor> ref;
  bool settled = false;
  for (int attempt = 0; attempt < 3 && !settled; ++attempt) ref = run_on_device(inputs, opts, fp32_plan_, &fp32, &settled);
  if (!settled) return ref;  // the next run calibrates

  std::vector<HalfEligibility> eligible(g_.nodes.size(), HalfEligibility::No);
  size_t gpu_nodes = 0;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const VkOpDef* k = partition_.kernel(i);
    if (k && !k->float32_node)
      eligible[i] = k->float32_outputs ? HalfEligibility::Float32Outputs : HalfEligibility::Yes;
    gpu_nodes += k != nullptr;
  }
  PrecisionPlan plan = plan_from_ranges(g_, eligible, fp32);
  // "" when a run under p agrees with float32's outputs, else where it does not.
  // The answer returned: float32's, or the last mixed run that agreed with it.
  std::vector<Tensor> answer = ref, agreed;
  auto check = [&](const PrecisionPlan& p, std::vector<ValueSample>* mixed) {
    sync_weights(p);
    std::vector<Tensor> got = run_on_device(inputs, opts, p, mixed);
    std::string why = first_disagreement(g_, ref, got);
    if (why.empty()) agreed = std::move(got);
    return why;
  };
  std::string outcome, why;  // why: how the plan last checked disagreed
  int runs = 0;
  // Targeted rounds: each mixed run is sampled, and the nodes that bring
  // the error in go back to float32.
  bool moved = false;  // the plan changed after its last check
  for (int round = 1; round <= kTargetedRounds && plan.half_nodes(); ++round) {
    std::vector<ValueSample> mixed;
    ++runs;
    why = check(plan, &mixed);
    moved = why.empty() ? false : promote(g_, plan, fp32, mixed);
    if (!moved) break;
  }
  if (moved && plan.half_nodes()) {
    ++runs;
    why = check(plan, nullptr);
  }
  if (!why.empty() && plan.half_nodes()) {
    // The error is spread thin: keep float16 for the longest prefix (in
    // graph order) of the float16 nodes that agrees, found by halving;
    // the nodes nearest the outputs go back to float32.
    std::vector<size_t> order;
    for (size_t i = 0; i < plan.half.size(); ++i)
      if (plan.half[i]) order.push_back(i);
    auto prefix = [&](size_t k) {
      PrecisionPlan p = plan;
      for (size_t j = k; j < order.size(); ++j) p.half[order[j]] = 0;
      return p;
    };
    size_t lo = 0, hi = order.size();  // a prefix of lo agrees (0: all float32); hi does not
    std::vector<Tensor> at_lo;
    for (int step = 0; step < kBisectSteps && hi - lo > 1; ++step) {
      const size_t mid = (lo + hi) / 2;
      ++runs;
      if (check(prefix(mid), nullptr).empty()) lo = mid, at_lo = std::move(agreed);
      else hi = mid;
    }
    agreed = std::move(at_lo);
    plan = prefix(lo);
    plan.kept_fp32.push_back(std::to_string(order.size() - lo) + " nodes nearest the outputs: with them in fp16, " + why);
  }
  if (plan.half_nodes()) {
    outcome = "its outputs agreed with fp32; " + std::to_string(runs) + " mixed run" + (runs > 1 ? "s" : "") + " to decide";
    answer = std::move(agreed);
  } else {
    outcome = "fp16 kept nowhere";
  }
  plan.decided = true;
  plan.note = "precision fp16: " + std::to_string(plan.half_nodes()) + " of " + std::to_string(gpu_nodes) +
              " GPU nodes in fp16 (" + outcome + ")" + (plan.kept_fp32.empty() ? "" : "; kept in fp32:") +
              first_lines(plan.kept_fp32, 8);
  sync_weights(plan);
  // The memory plans recorded so far have the float32 sizes.
  device_arenas_.clear();
  {
    std::lock_guard<std::mutex> l(mu_);
    precision_ = std::make_shared<const PrecisionPlan>(std::move(plan));
    if (last_) last_->precision_note = precision_->note;
  }
  return answer;
}

std::vector<Tensor> VulkanCompiled::run_mixed(const std::vector<Tensor>& inputs, const backends::RunOptions& opts,
                                              const PrecisionPlan& plan) const {
  std::vector<Tensor> outs = run_on_device(inputs, opts, plan);
  if (plan.half_nodes() == 0 || !any_non_finite(outs, opts.threads)) return outs;
  // The calibrating input did not reach these values: float16 may have
  // overflowed. Float32 decides; its answer is returned when it differs
  // (read into tensors of its own: `outs` may be the caller's).
  backends::RunOptions own = opts;
  own.output_sink = nullptr;
  std::vector<Tensor> ref = run_on_device(inputs, own, fp32_plan_);
  if (first_disagreement(g_, ref, outs).empty()) return outs;
  std::lock_guard<std::mutex> l(mu_);
  if (last_)
    last_->precision_note = plan.note + "\nthis run: fp16 gave non-finite outputs that fp32 does not; the fp32 answer was returned";
  return ref;
}

}  // namespace kestrel::vulkan

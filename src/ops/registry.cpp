#include "ops/registry.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

namespace kestrel::ops {
namespace {
// Registration happens during static initialisation, before main; the map is
// read-only afterwards.
std::multimap<std::pair<std::string, std::string>, OpDef>& table() {
  static std::multimap<std::pair<std::string, std::string>, OpDef> t;
  return t;
}
std::string canonical_domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }
}  // namespace

bool register_op(OpDef def) {
  def.domain = canonical_domain(def.domain);
  table().emplace(std::make_pair(def.domain, def.name), std::move(def));
  return true;
}

const OpDef* find_op(const std::string& domain, const std::string& op, int opset) {
  auto [lo, hi] = table().equal_range({canonical_domain(domain), op});
  for (auto it = lo; it != hi; ++it)
    if (opset >= it->second.min_opset && opset <= it->second.max_opset) return &it->second;
  return nullptr;
}

std::string why_unsupported(const std::string& domain, const std::string& op, int opset) {
  auto [lo, hi] = table().equal_range({canonical_domain(domain), op});
  if (lo == hi) return "no kernel for this op";
  std::string ranges;
  for (auto it = lo; it != hi; ++it)
    ranges += (ranges.empty() ? "" : ", ") + std::to_string(it->second.min_opset) + ".." +
              std::to_string(it->second.max_opset);
  return "opset " + std::to_string(opset) + " is not supported (kernel covers " + ranges + ")";
}

namespace {
std::atomic<bool> poison_outputs{false};
}  // namespace

void set_poison_outputs(bool on) { poison_outputs = on; }

Tensor new_output_tensor(DType dtype, Shape shape, std::shared_ptr<uint8_t[]> storage, size_t offset) {
  const bool poison = poison_outputs.load(std::memory_order_relaxed);
  Tensor t = storage ? Tensor(dtype, std::move(shape), std::move(storage), offset)
                     : Tensor::uninitialized(dtype, std::move(shape));
  if (poison && t.nbytes()) std::memset(t.raw(), 0xFF, t.nbytes());
  return t;
}

FusedChecks& KernelContext::fused_checks() const { fail("runs outside a compiled graph, which keeps fused-node checks"); }
RotaryCache& KernelContext::rotary_cache() const { fail("runs outside a compiled graph, which keeps rotary tables"); }

const RunLimits& KernelContext::limits() const {
  static const RunLimits none;
  return none;
}

void KernelContext::check_iteration(int64_t done) const {
  const RunLimits& l = limits();
  if (l.max_loop_iterations > 0 && done >= l.max_loop_iterations)
    fail("would run more than ", l.max_loop_iterations, " iterations, the most one Loop or Scan node may run per "
         "run; raise the cap (SessionOptions::max_loop_iterations, --max-loop-iterations; 0 lifts it) if the model "
         "really needs more");
  if (l.stop_requested()) l.stop("at iteration " + std::to_string(done) + " of " + node.where());
}

std::vector<const OpDef*> all_ops() {
  std::vector<const OpDef*> v;
  for (auto& [k, d] : table()) v.push_back(&d);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return v;
}

}  // namespace kestrel::ops

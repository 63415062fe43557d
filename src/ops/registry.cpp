#include "ops/registry.h"

#include <atomic>
#include <cstring>

namespace kestrel::ops {
namespace {
KernelTable<OpDef>& table() {
  static KernelTable<OpDef> t;
  return t;
}
}  // namespace

bool register_op(OpDef def) {
  table().add(std::move(def));
  return true;
}

const OpDef* find_op(const std::string& domain, const std::string& op, int opset) {
  return table().find(domain, op, opset);
}

std::string why_unsupported(const std::string& domain, const std::string& op, int opset) {
  const std::string ranges = table().ranges(domain, op);
  if (ranges.empty()) return "no kernel for this op";
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

std::vector<const OpDef*> all_ops() { return table().all(); }

}  // namespace kestrel::ops

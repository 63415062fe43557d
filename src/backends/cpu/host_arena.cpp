#include "backends/cpu/host_arena.h"

#include "core/buffer_pool.h"
#include "ops/registry.h"

namespace kestrel::backends::cpu {

RunArena::RunArena(std::shared_ptr<const ArenaPlan> plan) : plan_(std::move(plan)) {
  if (plan_->total) bytes_ = pooled_bytes(plan_->total, false);
}

Tensor RunArena::place(int v, int node, DType dtype, const Shape& shape) {
  if (!bytes_) return {};
  const int64_t at = plan_->slot(v, node, tensor_nbytes(dtype, shape));
  if (at < 0) return {};  // no slot, or the data chose a larger size this time
  return ops::new_output_tensor(dtype, shape, bytes_, size_t(at));
}

Tensor RunArena::place_temporary(int node, int position, DType dtype, const Shape& shape) {
  if (!bytes_) return {};
  auto it = plan_->temps.find({node, position});
  if (it == plan_->temps.end()) return {};
  size_t n = tensor_nbytes(dtype, shape);
  if (n == 0 || n > it->second.second) return {};
  return ops::new_output_tensor(dtype, shape, bytes_, it->second.first);
}

void RunArena::settle(const std::vector<int>& outputs, std::vector<Tensor>& env) const {
  if (!bytes_) return;
  for (int v : outputs) {
    if (v < 0 || !env[size_t(v)].defined()) continue;
    Tensor& t = env[size_t(v)];
    if (t.storage().owner_before(bytes_) || bytes_.owner_before(t.storage())) continue;  // not in the arena
    if (!plan_->holds(v, size_t(t.raw() - bytes_.get()), t.nbytes())) t = t.clone();
  }
}

}  // namespace kestrel::backends::cpu

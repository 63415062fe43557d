// One run's host arena: where the planned outputs of a CPU run go (the plan
// and how it is made: backends/arena_plan.h). Every tensor placed here holds
// the whole arena, so a view that escapes a run keeps the arena from the
// next run instead of being overwritten by it.
#pragma once
#include <memory>
#include <vector>

#include "backends/arena_plan.h"
#include "core/tensor.h"

namespace kestrel::backends::cpu {

// Host arena offsets are multiples of a cache line, as the pool's buffers are.
constexpr size_t kHostArenaAlign = 64;

// A host tensor's storage as the recorder identifies it.
inline std::shared_ptr<const void> storage_key(const Tensor& t) {
  return std::shared_ptr<const void>(t.storage(), t.storage().get());
}

class RunArena {
 public:
  explicit RunArena(std::shared_ptr<const ArenaPlan> plan);
  // Value v's output tensor made by node `node` in the arena, or an
  // undefined tensor when v has no slot there or this shape does not fit it.
  Tensor place(int v, int node, DType dtype, const Shape& shape);
  // The same for a temporary of node `node` at `position` (ArenaPlan::temps).
  Tensor place_temporary(int node, int position, DType dtype, const Shape& shape);
  // After a node: an output stored in the arena outside its own planned
  // region is copied to memory of its own (the region may be reused while it lives).
  void settle(const std::vector<int>& outputs, std::vector<Tensor>& env) const;

 private:
  std::shared_ptr<const ArenaPlan> plan_;
  std::shared_ptr<uint8_t[]> bytes_;
};

}  // namespace kestrel::backends::cpu

// Whether each fused node (a claimed transformer encoder) has been checked
// against its original subgraph, per input shape, and whether its claim was
// withdrawn. One ledger per compiled graph (backends::CompiledGraph), shared
// by every backend's kernel of the fused op in that graph's runs; a second
// session of the same model checks its own claims again.
#pragma once
#include <cstdint>
#include <mutex>
#include <set>
#include <utility>

#include "core/tensor.h"

namespace kestrel::ops {

class FusedChecks {
 public:
  enum class State { Unchecked, Agreed, Withdrawn };

  // Withdrawn for every shape once any shape disagreed.
  State state(int64_t claim_id, const Shape& input_shape) const;
  void record(int64_t claim_id, const Shape& input_shape, bool agreed);
  bool withdrawn(int64_t claim_id) const;
  // How many claims were withdrawn so far: work recorded while a claim held
  // is replayed only while this has not grown (backends/vulkan/replay.h).
  size_t withdrawals() const;

  // At most this many agreed (claim, shape) pairs are kept; past it the
  // ledger starts over, so a model fed ever new shapes checks again rather
  // than growing without bound (a withdrawal is never forgotten).
  static constexpr size_t kMaxAgreed = 4096;

 private:
  mutable std::mutex mu_;
  std::set<std::pair<int64_t, Shape>> agreed_;
  std::set<int64_t> withdrawn_;
};

}  // namespace kestrel::ops

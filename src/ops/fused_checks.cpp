#include "ops/fused_checks.h"

namespace kestrel::ops {

FusedChecks::State FusedChecks::state(int64_t claim_id, const Shape& input_shape) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (withdrawn_.count(claim_id)) return State::Withdrawn;
  return agreed_.count({claim_id, input_shape}) ? State::Agreed : State::Unchecked;
}

void FusedChecks::record(int64_t claim_id, const Shape& input_shape, bool agreed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!agreed) {
    withdrawn_.insert(claim_id);
    return;
  }
  if (agreed_.size() >= kMaxAgreed) agreed_.clear();
  agreed_.insert({claim_id, input_shape});
}

bool FusedChecks::withdrawn(int64_t claim_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return withdrawn_.count(claim_id) > 0;
}

size_t FusedChecks::withdrawals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return withdrawn_.size();
}

}  // namespace kestrel::ops

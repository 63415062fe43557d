#include "families/claim_state.h"

#include <map>
#include <mutex>
#include <set>

namespace kestrel::families {
namespace {
std::mutex g_mu;
std::set<std::pair<int64_t, Shape>> g_agreed;
std::set<int64_t> g_withdrawn;
}  // namespace

CheckState check_state(int64_t claim_id, const Shape& input_shape) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_withdrawn.count(claim_id)) return CheckState::Withdrawn;
  return g_agreed.count({claim_id, input_shape}) ? CheckState::Agreed : CheckState::Unchecked;
}

void record_check(int64_t claim_id, const Shape& input_shape, bool agreed) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (agreed) g_agreed.insert({claim_id, input_shape});
  else g_withdrawn.insert(claim_id);
}

bool withdrawn(int64_t claim_id) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_withdrawn.count(claim_id) > 0;
}

}  // namespace kestrel::families

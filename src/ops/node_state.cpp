#include "ops/node_state.h"

namespace kestrel::ops {

std::shared_ptr<void> NodeStateCache::find(const ir::Node* node, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (std::get<0>(*it) == node && std::get<1>(*it) == key) {
      entries_.splice(entries_.begin(), entries_, it);
      return std::get<2>(entries_.front());
    }
  return nullptr;
}

std::shared_ptr<void> NodeStateCache::insert(const ir::Node* node, const std::string& key, std::shared_ptr<void> made) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t kept = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (std::get<0>(*it) != node) {
      ++it;
      continue;
    }
    if (std::get<1>(*it) == key) return std::get<2>(*it);  // another run put one first
    if (++kept >= kPerNode) {
      it = entries_.erase(it);
      continue;
    }
    ++it;
  }
  entries_.emplace_front(node, key, made);
  return made;
}

size_t NodeStateCache::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace kestrel::ops

#include "ops/node_state.h"

#include <algorithm>

namespace kestrel::ops {

std::shared_ptr<void> NodeStateCache::find(const ir::Node* node, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(node);
  if (it == entries_.end()) return nullptr;
  std::vector<Entry>& v = it->second;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].key == key) {
      std::rotate(v.begin(), v.begin() + std::ptrdiff_t(i), v.begin() + std::ptrdiff_t(i) + 1);
      return v.front().state;
    }
  return nullptr;
}

std::shared_ptr<void> NodeStateCache::insert(const ir::Node* node, const std::string& key, std::shared_ptr<void> made) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Entry>& v = entries_[node];
  for (const Entry& e : v)
    if (e.key == key) return e.state;  // another run put one first
  if (v.size() >= kPerNode) v.pop_back();
  v.insert(v.begin(), Entry{key, made});
  return made;
}

size_t NodeStateCache::size() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [node, v] : entries_) n += v.size();
  return n;
}

}  // namespace kestrel::ops

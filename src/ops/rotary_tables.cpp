#include "ops/rotary_tables.h"

#include <cmath>

namespace kestrel::ops {

RotaryTables compute_rotary_tables(const std::vector<float>& inv_freq, int64_t tokens) {
  RotaryTables t;
  const size_t half = inv_freq.size();
  t.cos.resize(size_t(tokens) * half);
  t.sin.resize(size_t(tokens) * half);
  for (int64_t p = 0; p < tokens; ++p)
    for (size_t j = 0; j < half; ++j) {
      const float angle = float(p) * inv_freq[j];
      t.cos[size_t(p) * half + j] = std::cos(angle);
      t.sin[size_t(p) * half + j] = std::sin(angle);
    }
  return t;
}

std::shared_ptr<const RotaryTables> RotaryCache::get(const std::vector<float>& inv_freq, int64_t tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->first.second == tokens && it->first.first == inv_freq) {
      entries_.splice(entries_.begin(), entries_, it);
      return entries_.front().second;
    }
  auto t = std::make_shared<const RotaryTables>(compute_rotary_tables(inv_freq, tokens));
  entries_.emplace_front(Key{inv_freq, tokens}, t);
  if (entries_.size() > kKept) entries_.pop_back();
  return t;
}

size_t RotaryCache::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace kestrel::ops

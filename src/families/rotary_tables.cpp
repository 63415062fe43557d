#include "families/rotary_tables.h"

#include <cmath>
#include <map>
#include <mutex>

namespace kestrel::families {

std::shared_ptr<const RotaryTables> rotary_tables(const std::vector<float>& inv_freq, int64_t tokens) {
  static std::mutex mu;
  static std::map<std::pair<std::vector<float>, int64_t>, std::shared_ptr<const RotaryTables>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(inv_freq, tokens);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();  // many sequence lengths: start over rather than grow
  auto t = std::make_shared<RotaryTables>();
  const size_t half = inv_freq.size();
  t->cos.resize(size_t(tokens) * half);
  t->sin.resize(size_t(tokens) * half);
  for (int64_t p = 0; p < tokens; ++p)
    for (size_t j = 0; j < half; ++j) {
      const float angle = float(p) * inv_freq[j];
      t->cos[size_t(p) * half + j] = std::cos(angle);
      t->sin[size_t(p) * half + j] = std::sin(angle);
    }
  return cache[key] = t;
}

}  // namespace kestrel::families

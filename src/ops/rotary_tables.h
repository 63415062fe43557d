// The rotary embedding's cos/sin tables [tokens, head_dim / 2] for one set
// of frequencies: cos(t * f_j) and sin(t * f_j), the angle in float32 as the
// exported graphs compute it. Both backends' fused rotary encoders read them
// from their compiled graph's cache (reached through the run's options, as
// its fused-node checks are): computed once per frequency set and token
// count, the least recently used dropped past kKept (a model has one or two
// frequency sets; a text model meets many sequence lengths).
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace kestrel::ops {

struct RotaryTables {
  std::vector<float> cos, sin;  // [tokens, half]
};

// The tables, computed now (the plain reference the cache serves).
RotaryTables compute_rotary_tables(const std::vector<float>& inv_freq, int64_t tokens);

class RotaryCache {
 public:
  static constexpr size_t kKept = 16;
  std::shared_ptr<const RotaryTables> get(const std::vector<float>& inv_freq, int64_t tokens);
  size_t size();

 private:
  using Key = std::pair<std::vector<float>, int64_t>;
  std::mutex mu_;
  std::list<std::pair<Key, std::shared_ptr<const RotaryTables>>> entries_;  // most recently used first
};

}  // namespace kestrel::ops

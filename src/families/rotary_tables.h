// The rotary embedding's cos/sin tables [tokens, head_dim / 2] for one set
// of frequencies: cos(t * f_j) and sin(t * f_j), the angle in float32 as the
// exported graphs compute it. Both fused RopeEncoder kernels read them; they
// are computed once per frequency set and token count and kept (a few dozen
// sets at most: a model has one or two frequency sets).
#pragma once
#include <memory>
#include <vector>

namespace kestrel::families {

struct RotaryTables {
  std::vector<float> cos, sin;  // [tokens, half]
};

std::shared_ptr<const RotaryTables> rotary_tables(const std::vector<float>& inv_freq, int64_t tokens);

}  // namespace kestrel::families

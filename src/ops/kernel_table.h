// The one table behind every kernel registry (the ops' reference kernels,
// the CPU backend's fast kernels, the Vulkan kernels): definitions keyed by
// (domain, op name), each covering an opset range. Registration happens
// during static initialisation, before main; a table is read-only after.
// Def has `name`, `domain`, `min_opset` and `max_opset`.
#pragma once
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kestrel::ops {

// "ai.onnx" is the default domain, "".
inline std::string canonical_domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

template <typename Def>
class KernelTable {
 public:
  void add(Def def) {
    def.domain = canonical_domain(def.domain);
    std::pair<std::string, std::string> key{def.domain, def.name};
    table_.emplace(std::move(key), std::move(def));
  }
  // nullptr when none covers (domain, op) at this opset.
  const Def* find(const std::string& domain, const std::string& op, int opset) const {
    auto [lo, hi] = table_.equal_range({canonical_domain(domain), op});
    for (auto it = lo; it != hi; ++it)
      if (opset >= it->second.min_opset && opset <= it->second.max_opset) return &it->second;
    return nullptr;
  }
  // The opset ranges registered for (domain, op), as "7..21, 1..6"; "" when none.
  std::string ranges(const std::string& domain, const std::string& op) const {
    auto [lo, hi] = table_.equal_range({canonical_domain(domain), op});
    std::string r;
    for (auto it = lo; it != hi; ++it)
      r += (r.empty() ? "" : ", ") + std::to_string(it->second.min_opset) + ".." + std::to_string(it->second.max_opset);
    return r;
  }
  // Every definition, sorted by name.
  std::vector<const Def*> all() const {
    std::vector<const Def*> v;
    for (auto& [key, d] : table_) v.push_back(&d);
    std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->name < b->name; });
    return v;
  }

 private:
  std::multimap<std::pair<std::string, std::string>, Def> table_;
};

}  // namespace kestrel::ops

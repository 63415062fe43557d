#include "ort_ep/node_groups.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <stdexcept>

namespace kestrel::ort_ep {
namespace {

// A set of node indices as bits: reachability for graphs of thousands of
// nodes costs a few megabytes and makes each path check a pass of words.
struct Bits {
  std::vector<uint64_t> w;
  explicit Bits(size_t n = 0) : w((n + 63) / 64, 0) {}
  void set(size_t i) { w[i / 64] |= uint64_t(1) << (i % 64); }
  bool has(size_t i) const { return (w[i / 64] >> (i % 64)) & 1; }
  void add(const Bits& o) {
    for (size_t k = 0; k < w.size(); ++k) w[k] |= o.w[k];
  }
};

// Whether (a | a2) & (b | b2) has a bit outside (in | one more).
bool leaves_and_returns(const Bits& desc, const Bits& desc_v, const Bits& anc, const Bits& anc_v, const Bits& in,
                        size_t v) {
  for (size_t k = 0; k < desc.w.size(); ++k) {
    uint64_t inside = in.w[k];
    if (v / 64 == k) inside |= uint64_t(1) << (v % 64);
    if (((desc.w[k] | desc_v.w[k]) & (anc.w[k] | anc_v.w[k])) & ~inside) return true;
  }
  return false;
}

}  // namespace

std::vector<std::vector<size_t>> fusable_groups(const NodeGraph& g) {
  const size_t n = g.consumers.size();
  std::vector<std::vector<size_t>> producers(n);
  std::vector<size_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (size_t c : g.consumers[i]) {
      producers[c].push_back(i);
      ++pending[c];
    }
  // Kahn's order.
  std::vector<size_t> order;
  std::deque<size_t> ready;
  for (size_t i = 0; i < n; ++i)
    if (!pending[i]) ready.push_back(i);
  while (!ready.empty()) {
    const size_t i = ready.front();
    ready.pop_front();
    order.push_back(i);
    for (size_t c : g.consumers[i])
      if (--pending[c] == 0) ready.push_back(c);
  }
  if (order.size() != n) throw std::invalid_argument("the graph has a cycle");

  std::vector<Bits> desc(n, Bits(n)), anc(n, Bits(n));
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (size_t c : g.consumers[*it]) {
      desc[*it].set(c);
      desc[*it].add(desc[c]);
    }
  for (size_t i : order)
    for (size_t p : producers[i]) {
      anc[i].set(p);
      anc[i].add(anc[p]);
    }

  std::vector<bool> taken(n, false);
  std::vector<std::vector<size_t>> groups;
  for (size_t seed : order) {
    if (!g.eligible[seed] || taken[seed]) continue;
    std::vector<size_t> group{seed};
    Bits in(n), d = desc[seed], a = anc[seed];
    in.set(seed);
    taken[seed] = true;
    // Grow through neighbours; one refused now may fit once the nodes
    // between it and the group have joined, so refusals are retried after
    // every growth until a whole round adds nothing.
    std::vector<size_t> candidates;
    auto offer_neighbours = [&](size_t i) {
      for (size_t c : g.consumers[i]) candidates.push_back(c);
      for (size_t p : producers[i]) candidates.push_back(p);
    };
    offer_neighbours(seed);
    bool grew = true;
    while (grew) {
      grew = false;
      std::vector<size_t> refused;
      while (!candidates.empty()) {
        const size_t v = candidates.back();
        candidates.pop_back();
        if (!g.eligible[v] || taken[v] || in.has(v)) continue;
        if (leaves_and_returns(d, desc[v], a, anc[v], in, v)) {
          refused.push_back(v);
          continue;
        }
        in.set(v);
        d.add(desc[v]);
        a.add(anc[v]);
        taken[v] = true;
        group.push_back(v);
        offer_neighbours(v);
        grew = true;
      }
      candidates = std::move(refused);
    }
    std::sort(group.begin(), group.end());
    groups.push_back(std::move(group));
  }
  std::stable_sort(groups.begin(), groups.end(), [](const auto& x, const auto& y) { return x.size() > y.size(); });
  return groups;
}

}  // namespace kestrel::ort_ep

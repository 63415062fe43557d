#include "core/lifetime_plan.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "core/error.h"

namespace kestrel {

namespace {

enum class Fit { Smallest, Lowest };  // which gap a buffer takes

// Places the buffers in `order`, each in a gap between the already placed
// buffers that overlap it in time (the smallest that holds it, or the
// lowest), else above them.
ArenaLayout place_in_order(const std::vector<LifetimeBuffer>& buffers, const std::vector<size_t>& bytes,
                           const std::vector<size_t>& order, Fit fit) {
  ArenaLayout out;
  out.offsets.assign(buffers.size(), 0);
  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of placed buffers overlapping in time
  for (size_t i : order) {
    busy.clear();
    for (size_t j : placed)
      if (buffers[j].first <= buffers[i].last && buffers[i].first <= buffers[j].last)
        busy.emplace_back(out.offsets[j], out.offsets[j] + bytes[j]);
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo > cursor && lo - cursor >= bytes[i] && lo - cursor < best_gap) {
        best = cursor, best_gap = lo - cursor;
        if (fit == Fit::Lowest) break;
      }
      cursor = std::max(cursor, hi);
    }
    out.offsets[i] = best != SIZE_MAX ? best : cursor;
    out.total = std::max(out.total, out.offsets[i] + bytes[i]);
    placed.push_back(i);
  }
  return out;
}

}  // namespace

ArenaLayout plan_arena(const std::vector<LifetimeBuffer>& buffers, size_t align) {
  KESTREL_CHECK(align && (align & (align - 1)) == 0, "arena alignment ", align, " is not a power of two");
  const size_t n = buffers.size();
  std::vector<size_t> bytes(n);
  for (size_t i = 0; i < n; ++i) {
    KESTREL_CHECK(buffers[i].first <= buffers[i].last, "buffer ", i, " ends before it starts");
    bytes[i] = (buffers[i].bytes + align - 1) & ~(align - 1);
  }
  // The most bytes alive at each step, and at one step (the lower bound).
  std::map<int, long long> delta;
  for (size_t i = 0; i < n; ++i) {
    delta[buffers[i].first] += (long long)bytes[i];
    delta[buffers[i].last + 1] -= (long long)bytes[i];
  }
  std::vector<std::pair<int, size_t>> live_at;  // (step, bytes alive from it on)
  long long now = 0;
  size_t live_peak = 0;
  for (const auto& [step, d] : delta) {
    live_at.emplace_back(step, size_t(now += d));
    live_peak = std::max(live_peak, size_t(now));
  }
  // No one order wins on every graph, so three are tried, each with both
  // fits, and the smallest arena kept (ties: the earlier). By size, largest
  // first (TFLite's and ONNX Runtime's greedy by size); by execution order
  // (what a first-fit allocator does at run time); by breadth (the steps
  // with the most bytes alive first, their buffers largest first).
  std::vector<size_t> by_size(n);
  std::iota(by_size.begin(), by_size.end(), size_t(0));
  auto longer = [&](size_t a, size_t b) {
    int la = buffers[a].last - buffers[a].first, lb = buffers[b].last - buffers[b].first;
    return la != lb ? la > lb : a < b;
  };
  std::sort(by_size.begin(), by_size.end(),
            [&](size_t a, size_t b) { return bytes[a] != bytes[b] ? bytes[a] > bytes[b] : longer(a, b); });
  std::vector<size_t> by_time = by_size;
  std::stable_sort(by_time.begin(), by_time.end(),
                   [&](size_t a, size_t b) { return buffers[a].first < buffers[b].first; });
  std::vector<size_t> by_breadth;
  {
    std::vector<std::pair<size_t, int>> steps;  // (bytes alive, step)
    for (size_t k = 0; k < live_at.size(); ++k) steps.emplace_back(live_at[k].second, live_at[k].first);
    std::sort(steps.begin(), steps.end(), [](auto& a, auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    std::vector<char> taken(n, 0);
    for (const auto& [alive, step] : steps)
      for (size_t i : by_size)
        if (!taken[i] && buffers[i].first <= step && step <= buffers[i].last) taken[i] = 1, by_breadth.push_back(i);
  }
  ArenaLayout out;
  bool have = false;
  for (const auto* order : {&by_size, &by_time, &by_breadth})
    for (Fit fit : {Fit::Smallest, Fit::Lowest}) {
      ArenaLayout l = place_in_order(buffers, bytes, *order, fit);
      if (!have || l.total < out.total) out = std::move(l), have = true;
    }
  out.live_peak = live_peak;
  return out;
}

}  // namespace kestrel

// Places buffers with known lifetimes in one arena so that buffers alive at
// the same time never overlap. Greedy placement, as TFLite's arena planner
// and ONNX Runtime's memory pattern do: buffers go in one by one, each into
// a gap between the already placed buffers that overlap it in time, or above
// them. The order matters and none is best on every graph, so a few are
// tried (largest first, execution order, busiest step first) and the
// smallest arena kept: at or a little above the most bytes alive at once.
#pragma once
#include <cstddef>
#include <vector>

namespace kestrel {

// A buffer of `bytes`, alive from step `first` to step `last` inclusive.
struct LifetimeBuffer {
  size_t bytes = 0;
  int first = 0, last = 0;
};

struct ArenaLayout {
  std::vector<size_t> offsets;  // per buffer, multiples of the alignment
  size_t total = 0;             // the arena's bytes
  size_t live_peak = 0;         // the most bytes alive at once (the lower bound)
};

// `align` must be a power of two; every buffer's size is rounded up to it.
ArenaLayout plan_arena(const std::vector<LifetimeBuffer>& buffers, size_t align);

}  // namespace kestrel

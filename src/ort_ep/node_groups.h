// Groups of nodes a host may fuse into one node each: connected, and
// closed under paths (no path leaves a group and comes back into it, or the
// fused graph would have a cycle). ONNX Runtime's AddNodesToFuse requires
// the second; the first keeps each group one compiled graph.
#pragma once
#include <cstddef>
#include <vector>

namespace kestrel::ort_ep {

struct NodeGraph {
  std::vector<std::vector<size_t>> consumers;  // per node: the nodes reading its outputs
  std::vector<bool> eligible;                  // may join a group
};

// Largest groups first grown greedily from each eligible node in
// topological order, each node in at most one group; nodes left alone form
// groups of one. Throws std::invalid_argument if the graph has a cycle.
std::vector<std::vector<size_t>> fusable_groups(const NodeGraph& g);

}  // namespace kestrel::ort_ep

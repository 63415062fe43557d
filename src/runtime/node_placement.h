// Where a session would run each node of a graph, asked before any session
// exists: for a host that owns the graph and hands Kestrel the parts it runs
// well (the ONNX Runtime plugin, ort_ep/). The answer is the session's own:
// the same passes and encoder claims, then the chosen backend's static
// partition (partition/partition.h), mapped back onto the graph as loaded.
#pragma once
#include <string>
#include <vector>

#include "families/families.h"
#include "ir/graph.h"
#include "runtime/session_options.h"

namespace kestrel::runtime {

struct NodePlacement {
  // The backend runs it: its own kernel, or the fused encoder that replaced it.
  bool on_backend = false;
  // A session runs it at all: on the backend, or on the CPU beside it (an op
  // without a Vulkan kernel, as a Vulkan session runs it on its own).
  bool in_session = false;
  std::string encoder;  // the family whose fused encoder replaced the node ("": none)
  std::string why;      // why the backend leaves it, when it does
};

struct GraphPlacement {
  bool vulkan = false;                 // the backend asked: Vulkan, else the CPU's
  std::vector<NodePlacement> nodes;    // per node of the graph as given
  families::ClaimReport families;      // the encoders claimed
};

// `g` is a graph as loaded (onnx_io), before any pass; it is not changed.
// Throws Error on options out of range or a backend that cannot start.
GraphPlacement place_nodes(const ir::Graph& g, const SessionOptions& opts);

}  // namespace kestrel::runtime

// Who produces and who reads each value of a graph: what the fusion passes
// need to know before merging a node into its producer.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kestrel::passes {

class GraphUses {
 public:
  explicit GraphUses(const ir::Graph& g) : g_(g) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (int v : g.nodes[i].inputs)
        if (v >= 0) ++readers_[v], reader_node_[v] = i;
      for (int v : g.nodes[i].outputs)
        if (v >= 0) producer_[v] = i;
      for (std::string& name : ir::implicit_reads(g.nodes[i])) implicit_.insert(std::move(name));
    }
    outputs_.insert(g.outputs.begin(), g.outputs.end());
  }
  // Index of the node producing v, or -1 (graph input, initializer).
  int producer(int v) const {
    auto it = producer_.find(v);
    return it == producer_.end() ? -1 : int(it->second);
  }
  // Node inputs that read v.
  int readers(int v) const {
    auto it = readers_.find(v);
    return it == readers_.end() ? 0 : it->second;
  }
  // True when only node inputs read v: it is not a graph output and no subgraph reads it.
  bool only_node_inputs_read(int v) const { return !outputs_.count(v) && !implicit_.count(g_.values[size_t(v)].name); }
  // True when one node input reads v and nothing else can see it (not a graph
  // output, not read by a subgraph): the producer may be merged into that reader.
  bool private_to_one_reader(int v) const { return readers(v) == 1 && only_node_inputs_read(v); }
  // The node reading v where private_to_one_reader(v); -1 otherwise.
  int sole_reader(int v) const {
    return private_to_one_reader(v) ? int(reader_node_.at(v)) : -1;
  }

 private:
  const ir::Graph& g_;
  std::map<int, int> readers_;
  std::map<int, size_t> reader_node_;  // the last node reading each value
  std::map<int, size_t> producer_;
  std::set<int> outputs_;
  std::set<std::string> implicit_;
};

// The initializer value v holds, or null when v is computed (or absent, -1).
inline const Tensor* constant(const ir::Graph& g, int v) {
  if (v < 0) return nullptr;
  auto it = g.initializers.find(v);
  return it == g.initializers.end() ? nullptr : &it->second;
}

// Drops the nodes marked in `removed` (order of the rest unchanged).
inline void erase_nodes(ir::Graph& g, const std::vector<bool>& removed) {
  std::vector<ir::Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

}  // namespace kestrel::passes

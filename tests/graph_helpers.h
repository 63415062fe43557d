// Small helpers the family tests share: fixture paths and nodes by name.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kestrel::test {

inline std::string model_fixture(const std::string& model, const std::string& file) {
  return std::string(KESTREL_SOURCE_DIR) + "/tests/models/" + model + "/" + file;
}

inline ir::Node* node_named(ir::Graph& g, const std::string& name) {
  for (ir::Node& n : g.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

// Gives every tensor but the graph's inputs and outputs, and every node, a
// meaningless new name (a re-export that renames everything).
inline void rename_everything(ir::Graph& g) {
  for (size_t v = 0; v < g.values.size(); ++v) {
    bool io = std::find(g.inputs.begin(), g.inputs.end(), int(v)) != g.inputs.end() ||
              std::find(g.outputs.begin(), g.outputs.end(), int(v)) != g.outputs.end();
    if (!io) g.values[v].name = "t" + std::to_string(v * 7919 % 100003);
  }
  g.by_name.clear();
  for (size_t v = 0; v < g.values.size(); ++v) g.by_name[g.values[v].name] = int(v);
  for (size_t i = 0; i < g.nodes.size(); ++i) g.nodes[i].name = "n" + std::to_string(i);
}

// Removes the nodes whose outputs nothing reads (neither a node nor the
// graph's outputs), repeatedly: what an optimizer leaves after folding.
inline void drop_unread_nodes(ir::Graph& g) {
  for (bool dropped = true; dropped;) {
    std::vector<bool> read(g.values.size(), false);
    for (const ir::Node& n : g.nodes)
      for (int v : n.inputs)
        if (v >= 0) read[size_t(v)] = true;
    for (int v : g.outputs) read[size_t(v)] = true;
    const size_t before = g.nodes.size();
    g.nodes.erase(std::remove_if(g.nodes.begin(), g.nodes.end(),
                                 [&](const ir::Node& n) {
                                   return std::none_of(n.outputs.begin(), n.outputs.end(),
                                                       [&](int v) { return v >= 0 && read[size_t(v)]; });
                                 }),
                  g.nodes.end());
    dropped = g.nodes.size() != before;
  }
}

}  // namespace kestrel::test

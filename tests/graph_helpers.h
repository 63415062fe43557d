// Small helpers the family tests share: fixture paths and nodes by name.
#pragma once
#include <string>

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

}  // namespace kestrel::test

// Runs a graph node by node with the reference kernels. Values are freed as
// soon as their last reader has run, so peak memory follows the live set.
#pragma once
#include <vector>

#include "backends/backend.h"
#include "ops/registry.h"

namespace kestrel::backends::cpu {

// A name -> tensor lookup chain for subgraphs reading outer-scope values.
struct Scope {
  const ir::Graph* graph = nullptr;
  const std::vector<Tensor>* env = nullptr;
  const Scope* parent = nullptr;
  const Tensor* lookup(const std::string& name) const;
};

// The per-graph facts the executor needs: kernel per node and when each value dies.
struct Plan {
  const ir::Graph* graph = nullptr;
  std::vector<const ops::OpDef*> kernels;
  std::vector<std::vector<int>> release_after;  // node index -> values to free after it
  static Plan build(const ir::Graph& g);
};

std::vector<Tensor> execute(const Plan& plan, const std::vector<Tensor>& inputs, const Scope* outer,
                            const RunOptions& opts);

}  // namespace kestrel::backends::cpu

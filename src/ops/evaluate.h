// Runs one node's reference kernel on given input tensors, outside any graph
// execution. Used by load-time passes (constant folding). Nodes with
// subgraphs (If, Loop) are not evaluated this way.
#pragma once
#include <vector>

#include "ops/registry.h"

namespace kestrel::ops {

// `inputs[i]` undefined means the optional input i is absent. Throws Error.
std::vector<Tensor> evaluate_node(const ir::Node& node, const std::vector<Tensor>& inputs, int threads = 1);

}  // namespace kestrel::ops

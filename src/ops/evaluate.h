// Runs one node's reference kernel on given input tensors, outside any graph
// execution. Used by load-time passes (constant folding). Nodes with
// subgraphs (If, Loop) are not evaluated this way.
#pragma once
#include <vector>

#include "ops/registry.h"

namespace kestrel::ops {

// `inputs[i]` undefined means the optional input i is absent. Throws Error,
// also when an output would take more than `max_output_bytes` (checked
// before it is allocated, so a load-time pass never fills a huge tensor only
// to drop it).
std::vector<Tensor> evaluate_node(const ir::Node& node, const std::vector<Tensor>& inputs, int threads = 1,
                                  size_t max_output_bytes = kMaxTensorBytes);

}  // namespace kestrel::ops

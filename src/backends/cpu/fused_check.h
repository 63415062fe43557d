// How the CPU runs a fused encoder node (families/families.h): the fused
// kernel once the claim agreed for the input's shape; on the first run of a
// shape, the fused kernel and the node's "original" subgraph, compared
// (cosine >= 0.999999, max error <= 1e-4 of the range); after a
// disagreement, the original subgraph, with one warning (the claim is
// withdrawn). Inputs 1..side_inputs (attribute) feed the subgraph too.
#pragma once
#include <vector>

#include "ops/common.h"

namespace kestrel::backends::cpu {

void run_checked(ops::KernelContext& ctx, std::vector<Tensor> (*fused)(ops::KernelContext&));

}  // namespace kestrel::backends::cpu

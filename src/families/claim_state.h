// Whether each fused node's result has been checked against its original
// subgraph, per input shape, and whether its claim was withdrawn. Shared by
// every backend's kernel of the fused op (and read by tests and reports).
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace kestrel::families {

enum class CheckState { Unchecked, Agreed, Withdrawn };

// Withdrawn for every shape once any shape disagreed.
CheckState check_state(int64_t claim_id, const Shape& input_shape);
void record_check(int64_t claim_id, const Shape& input_shape, bool agreed);
bool withdrawn(int64_t claim_id);

}  // namespace kestrel::families

// SAM's ViT-Det image encoder: chains of windowed / global layers with the
// decomposed relative-position bias (vitdet_layer.h) after a patch-embedding
// Conv, claimed as one com.kestrel ViTDetEncoder node (vitdet_spec.h).
#pragma once
#include <atomic>

#include "families/families.h"

namespace kestrel::families {

// Claims at most one stack per call; true when it did (call again on the new graph).
bool claim_vitdet_stack(ir::Graph& g, ClaimReport& report, std::atomic<int64_t>& claim_ids);

}  // namespace kestrel::families

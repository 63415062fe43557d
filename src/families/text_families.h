// The rotary text family (ModernBERT), claimed by claim_families.
#pragma once
#include <atomic>

#include "families/families.h"

namespace kestrel::families {

// Claims one chain of rotary encoder layers in g, if any; returns whether it did.
bool claim_text_stack(ir::Graph& g, ClaimReport& report, std::atomic<int64_t>& claim_ids, const ClaimOptions& opts);

}  // namespace kestrel::families

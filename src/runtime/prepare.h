// The one way a loaded graph becomes the graph Kestrel runs: the load-time
// passes (constant folding, fusions), then the transformer-encoder claims.
// Sessions, `inspect` and the tests that look at a prepared graph all use it.
#pragma once
#include "families/families.h"
#include "ir/graph.h"
#include "runtime/config.h"

namespace kestrel::runtime {

// Whether the session runs on the Vulkan backend (else the CPU's): the
// passes shape the graph for it.
bool runs_on_vulkan(const Config& c);

// Rewrites g in place (the same rewrites for either backend); returns the
// encoders claimed and those left alone.
families::ClaimReport prepare_graph(ir::Graph& g, const Config& c);

}  // namespace kestrel::runtime

// The one way a loaded graph becomes the graph Kestrel runs: the load-time
// passes (constant folding, fusions), then the transformer-encoder claims.
// Sessions, `inspect` and the tests that look at a prepared graph all use it.
#pragma once
#include "families/families.h"
#include "ir/graph.h"
#include "runtime/config.h"

namespace kestrel::runtime {

// Rewrites g in place; returns the encoders claimed and those left alone.
families::ClaimReport prepare_graph(ir::Graph& g, const Config& c);

}  // namespace kestrel::runtime

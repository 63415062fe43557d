#include "runtime/prepare.h"

#include "passes/passes.h"

namespace kestrel::runtime {

families::ClaimReport prepare_graph(ir::Graph& g, const Config& c) {
  passes::run_default_passes(g);
  return families::claim_families(g, c.claims);
}

}  // namespace kestrel::runtime

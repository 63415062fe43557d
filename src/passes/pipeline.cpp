// The order Kestrel rewrites a graph in at load. Folding runs first so the
// fusions see constant operands (e.g. Clip bounds) as initializers.
#include "passes/passes.h"

namespace kestrel::passes {

void run_default_passes(ir::Graph& g) {
  fold_constants(g);
  fold_batchnorm(g);
  fuse_pads(g);
  fuse_activations(g);
}

}  // namespace kestrel::passes

// The order Kestrel rewrites a graph in at load. Folding runs first so the
// fusions see constant operands (e.g. Clip bounds) as initializers; only the
// QDQ convolutions' fusion runs before it, while the weights' quantizers are
// still there to read.
#include <algorithm>

#include "passes/passes.h"

namespace kestrel::passes {

namespace {

// The chain of graphs enclosing a subgraph, innermost first.
struct Enclosing {
  const ir::Graph* graph;
  const Enclosing* parent;
};

bool reads_from_outside(const ir::Graph& g, int v) {
  return std::find(g.outer_refs.begin(), g.outer_refs.end(), v) != g.outer_refs.end();
}

// The constant a subgraph sees under `name`: the initializer of the nearest
// enclosing graph that defines the name, or null when that graph computes it.
const Tensor* enclosing_constant(const Enclosing* scope, const std::string& name) {
  for (; scope; scope = scope->parent) {
    int v = scope->graph->find(name);
    if (v < 0 || reads_from_outside(*scope->graph, v)) continue;
    auto it = scope->graph->initializers.find(v);
    return it == scope->graph->initializers.end() ? nullptr : &it->second;
  }
  return nullptr;
}

// Makes the enclosing constants a subgraph reads its own initializers, so
// the work it does on them can fold too.
void import_enclosing_constants(ir::Graph& sub, const Enclosing* scope) {
  std::vector<int> still_outer;
  for (int v : sub.outer_refs) {
    const Tensor* t = enclosing_constant(scope, sub.values[size_t(v)].name);
    if (!t) {
      still_outer.push_back(v);
      continue;
    }
    sub.initializers[v] = *t;
    sub.values[size_t(v)].dtype = t->dtype();
  }
  sub.outer_refs = std::move(still_outer);
}

void run_passes(ir::Graph& g, const Enclosing* outer, const PassOptions& options) {
  if (options.integer_qdq) {
    // Per-channel scales and biases into the Convs before them (into the
    // weights' dequantization scale), then activations before quantizers,
    // so a Conv -> [scale, bias] -> activation -> QuantizeLinear chain
    // reaches the QDQ fusion as a Conv carrying its activation (SiLU's
    // Sigmoid and Mul among them), which the QLinearConv then keeps.
    fold_conv_affine(g);
    fuse_activations(g, /*only_into_quantizers=*/true);
    fuse_qdq_convs(g);
    fuse_qdq_matmuls(g);
    fuse_nbits_matmuls(g);
    fuse_dynamic_quantize_matmuls(g);
    fuse_qdq_adds(g);
  }
  fold_constants(g, outer != nullptr);
  // A control-flow body runs every time its node does, so its constant work
  // (Silero VAD slices and concatenates its LSTM weights inside an If) is
  // worth folding once, here.
  Enclosing here{&g, outer};
  for (ir::Node& n : g.nodes)
    for (auto& [name, a] : n.attrs)
      if (a.g) {
        import_enclosing_constants(*a.g, &here);
        run_passes(*a.g, &here, options);
      }
  unflatten_gemms(g);
  fold_batchnorm(g);
  fold_conv_affine(g);
  fuse_pads(g);
  fold_space_to_depth(g);
  fuse_activations(g);
}

}  // namespace

void run_default_passes(ir::Graph& g, const PassOptions& options) { run_passes(g, nullptr, options); }

}  // namespace kestrel::passes

#include "backends/cpu/residual_fusion.h"

#include "ops/epilogue.h"
#include "passes/graph_uses.h"
#include "passes/passes.h"

namespace kestrel::backends::cpu {
namespace {

// Both shapes fully described and equal: each dim the same number, or the
// same symbol (ONNX shape inference gives equal symbols equal sizes).
bool same_static_shape(const ir::Value& a, const ir::Value& b) {
  if (!a.shape || !b.shape || a.shape->size() != b.shape->size()) return false;
  for (size_t i = 0; i < a.shape->size(); ++i) {
    const ir::Dim &x = (*a.shape)[i], &y = (*b.shape)[i];
    if (x.known() != y.known()) return false;
    if (x.known() ? x.value != y.value : (x.symbol.empty() || x.symbol != y.symbol)) return false;
  }
  return true;
}

bool float32(const ir::Graph& g, int v) { return g.values[size_t(v)].dtype == DType::Float32; }

}  // namespace

int fuse_residual_adds(ir::Graph& g) {
  int fused = 0;
  for (bool again = true; again;) {
    again = false;
    const passes::GraphUses uses(g);
    for (size_t ai = 0; ai < g.nodes.size() && !again; ++ai) {
      const ir::Node& add = g.nodes[ai];
      if (add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
      for (int side = 0; side < 2 && !again; ++side) {
        const int y = add.inputs[size_t(side)], r = add.inputs[size_t(1 - side)];
        const int ci = y >= 0 ? uses.producer(y) : -1;
        if (ci < 0 || r < 0 || r == y) continue;
        const ir::Node& conv = g.nodes[size_t(ci)];
        if (conv.op_type != "Conv" || !conv.domain.empty() || conv.has(ops::kEpilogueAttr) || conv.has(kResidualAttr) ||
            conv.inputs.size() > 3 || conv.outputs.size() != 1 || !uses.private_to_one_reader(y) ||
            !float32(g, y) || !float32(g, r) || !same_static_shape(g.values[size_t(y)], g.values[size_t(r)]))
          continue;
        // The fused node runs where the Add stood: after y's inputs and after r's producer.
        ir::Node f = conv;
        f.inputs.resize(3, -1);
        f.inputs.push_back(r);
        f.outputs = add.outputs;
        ir::Attribute at;
        at.kind = ir::Attribute::Kind::Int;
        at.i = 3;
        f.attrs[kResidualAttr] = at;
        g.nodes[ai] = std::move(f);
        g.nodes.erase(g.nodes.begin() + ci);
        ++fused;
        again = true;
      }
    }
  }
  // The activation after each fused Add now follows the Conv: the usual
  // fusion makes it the Conv's epilogue, applied after the residual.
  if (fused) passes::fuse_activations(g);
  return fused;
}

}  // namespace kestrel::backends::cpu

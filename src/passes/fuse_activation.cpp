// Folds an activation (Relu, Clip with constant bounds, LeakyRelu,
// HardSigmoid, Sigmoid) into the Conv that feeds it, so the activation runs on
// each output block while it is in cache instead of as a second pass over
// memory. Only when the Conv's output has no other reader.
#include "ops/epilogue.h"
#include "passes/graph_uses.h"
#include "passes/passes.h"

namespace kestrel::passes {
namespace {

// The activation's parameters, or false if it cannot be fused (e.g. Clip bounds not constant).
bool activation_params(const ir::Graph& g, const ir::Node& act, std::vector<float>& params) {
  switch (ops::Epilogue::kind_of(act.op_type)) {
    case ops::Epilogue::Kind::Relu:
    case ops::Epilogue::Kind::Sigmoid:
      return true;
    case ops::Epilogue::Kind::LeakyRelu:
      params = {act.attr_f("alpha", 0.01f)};
      return true;
    case ops::Epilogue::Kind::HardSigmoid:
      params = {act.attr_f("alpha", 0.2f), act.attr_f("beta", 0.5f)};
      return true;
    case ops::Epilogue::Kind::Clip: {
      if (act.opset < 11) {
        params = {act.attr_f("min", -3.4028234663852886e38f), act.attr_f("max", 3.4028234663852886e38f)};
        return true;
      }
      float bound[2] = {-INFINITY, INFINITY};
      for (size_t i = 1; i < act.inputs.size() && i < 3; ++i) {
        if (act.inputs[i] < 0) continue;
        auto it = g.initializers.find(act.inputs[i]);
        if (it == g.initializers.end() || it->second.numel() != 1 || it->second.dtype() != DType::Float32) return false;
        bound[i - 1] = it->second.to_f32()[0];
      }
      params = {bound[0], bound[1]};
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

int fuse_activations(ir::Graph& g) {
  GraphUses uses(g);
  std::vector<bool> removed(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& act = g.nodes[i];
    if (!act.domain.empty() || act.inputs.empty() || act.inputs[0] < 0 || act.outputs.size() != 1) continue;
    int x = act.inputs[0];
    int p = uses.producer(x);
    if (p < 0) continue;
    ir::Node& conv = g.nodes[size_t(p)];
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.has(ops::kEpilogueAttr) || conv.outputs.size() != 1)
      continue;
    if (!uses.private_to_one_reader(x)) continue;
    std::vector<float> params;
    if (!activation_params(g, act, params)) continue;
    ir::Attribute kind;
    kind.kind = ir::Attribute::Kind::String;
    kind.s = act.op_type;
    conv.attrs[ops::kEpilogueAttr] = kind;
    ir::Attribute pa;
    pa.kind = ir::Attribute::Kind::Floats;
    pa.floats = params;
    conv.attrs[ops::kEpilogueParamsAttr] = pa;
    conv.outputs[0] = act.outputs[0];
    removed[i] = true;
    ++fused;
  }
  erase_nodes(g, removed);
  return fused;
}

}  // namespace kestrel::passes

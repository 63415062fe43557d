// Folds an activation (Relu, Clip with constant bounds, LeakyRelu,
// HardSigmoid, Sigmoid) into the Conv that feeds it, so the activation runs on
// each output block while it is in cache instead of as a second pass over
// memory. Only when the Conv's output has no other reader.
#include <map>
#include <set>

#include "ops/epilogue.h"
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
  std::map<int, int> readers;  // value -> number of node inputs reading it
  for (const auto& n : g.nodes)
    for (int v : n.inputs)
      if (v >= 0) ++readers[v];
  std::set<int> outputs(g.outputs.begin(), g.outputs.end());
  std::set<std::string> outer;  // read implicitly by subgraphs: must keep their identity
  for (const auto& n : g.nodes)
    for (std::string& name : ir::implicit_reads(n)) outer.insert(std::move(name));
  std::map<int, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].outputs)
      if (v >= 0) producer[v] = i;

  std::vector<bool> removed(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& act = g.nodes[i];
    if (!act.domain.empty() || act.inputs.empty() || act.inputs[0] < 0 || act.outputs.size() != 1) continue;
    int x = act.inputs[0];
    auto p = producer.find(x);
    if (p == producer.end()) continue;
    ir::Node& conv = g.nodes[p->second];
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.has(ops::kEpilogueAttr) || conv.outputs.size() != 1)
      continue;
    if (readers[x] != 1 || outputs.count(x) || outer.count(g.values[size_t(x)].name)) continue;
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
  std::vector<ir::Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  return fused;
}

}  // namespace kestrel::passes

#include "families/block.h"

#include <algorithm>
#include <functional>
#include <map>

#include "families/families.h"

namespace kestrel::families {

bool assemble_block(const GraphIndex& gi, const std::set<int>& walked, int input, Block& b, std::string& why) {
  b = Block{};
  b.nodes = walked;
  b.input = input;
  const ir::Graph& g = gi.graph();
  // Candidates, last to first: nodes all of whose outputs only the block (or
  // other candidates) reads.
  std::set<int> helpers;
  for (int i = int(g.nodes.size()) - 1; i >= 0; --i) {
    if (b.nodes.count(i)) continue;
    const ir::Node& n = gi.node(i);
    bool only_block_reads = false;
    for (int v : n.outputs) {
      if (v < 0) continue;
      only_block_reads = !gi.readers(v).empty() && !gi.escapes(v) && v != input;  // never absorb the input's producer
      for (int r : gi.readers(v))
        if (!b.nodes.count(r) && !helpers.count(r)) only_block_reads = false;
      if (!only_block_reads) break;
    }
    bool has_subgraph = false;
    for (const auto& [name, a] : n.attrs) has_subgraph = has_subgraph || a.g != nullptr;
    if (only_block_reads && !has_subgraph) helpers.insert(i);
  }
  // Keep the helpers whose inputs the block provides (drops ones reaching
  // back to computed values before the encoder).
  auto provided = [&](int v, const std::set<int>& inside) {
    if (v < 0 || v == input || gi.constant(v) || gi.is_graph_input(v)) return true;
    int p = gi.producer_index(v);
    return p >= 0 && (b.nodes.count(p) || inside.count(p));
  };
  // ... and whose readers are all still in (a helper whose reader was
  // dropped must go too).
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = helpers.begin(); it != helpers.end();) {
      bool ok = true;
      for (int v : gi.node(*it).inputs) ok = ok && provided(v, helpers);
      for (int v : gi.node(*it).outputs)
        if (v >= 0)
          for (int r : gi.readers(v)) ok = ok && (b.nodes.count(r) || helpers.count(r));
      if (ok) {
        ++it;
      } else {
        it = helpers.erase(it);
        changed = true;
      }
    }
  }
  b.nodes.insert(helpers.begin(), helpers.end());
  // A value computed outside that does not depend on the block (a Reshape
  // target or mask an exporter shares with later layers) can be read: it
  // becomes a side input.
  std::map<int, bool> memo;
  std::function<bool(int, int)> independent = [&](int v, int depth) {
    if (v < 0 || gi.constant(v)) return true;
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    const int p = gi.producer_index(v);
    bool ok = depth < 200;
    if (p >= 0 && ok) {
      ok = !b.nodes.count(p);
      for (int in : gi.node(p).inputs) ok = ok && independent(in, depth + 1);
    }
    return memo[v] = ok;
  };
  // Sealed: every node reads block values, the input, constants, graph
  // inputs or values independent of the block; values leaving it are its outputs.
  std::set<int> side, outs;
  for (int i : b.nodes) {
    for (int v : gi.node(i).inputs) {
      const bool outside_shape = !provided(v, {}) && independent(v, 0);
      if (!provided(v, {}) && !outside_shape) {
        why = "the encoder reads '" + g.values[size_t(v)].name + "', computed outside it";
        return false;
      }
      if (v >= 0 && v != input && (gi.is_graph_input(v) || outside_shape)) side.insert(v);
    }
    for (int v : gi.node(i).outputs) {
      if (v < 0) continue;
      bool outside = gi.escapes(v);
      for (int r : gi.readers(v)) outside = outside || !b.nodes.count(r);
      if (outside) outs.insert(v);
    }
  }
  b.side_inputs.assign(side.begin(), side.end());
  for (int i : b.nodes)
    for (int v : gi.node(i).outputs)
      if (outs.count(v)) b.outputs.push_back(v);
  return true;
}

std::vector<const ir::Node*> first_norm_of_each_input(const ir::Graph& g) {
  std::vector<const ir::Node*> out;
  std::set<int> seen;
  for (const ir::Node& n : g.nodes)
    if (n.op_type == "LayerNormalization" && n.domain.empty() && !n.inputs.empty() && n.inputs[0] >= 0 &&
        seen.insert(n.inputs[0]).second)
      out.push_back(&n);
  return out;
}

bool layer_taps(const Block& b, const std::vector<int>& layer_outputs, std::vector<int>& taps) {
  taps.clear();
  for (int v : b.outputs) {
    auto it = std::find(layer_outputs.begin(), layer_outputs.end(), v);
    if (it == layer_outputs.end()) return false;
    taps.push_back(int(it - layer_outputs.begin()));
  }
  std::sort(taps.begin(), taps.end());
  return !taps.empty() && taps.back() == int(layer_outputs.size()) - 1;
}

namespace {

std::shared_ptr<ir::Graph> original_subgraph(const ir::Graph& g, const GraphIndex& gi, const Block& b,
                                             const std::vector<int>& outputs, const std::string& name) {
  auto sub = std::make_shared<ir::Graph>();
  sub->name = name;
  auto local = [&](int v) {
    if (v < 0) return -1;
    int id = sub->add_value(g.values[size_t(v)].name);
    sub->values[size_t(id)].dtype = g.values[size_t(v)].dtype;
    if (const Tensor* t = gi.constant(v)) sub->initializers[id] = *t;
    return id;
  };
  sub->inputs.push_back(local(b.input));
  for (int v : b.side_inputs) sub->inputs.push_back(local(v));
  for (int i : b.nodes) {
    ir::Node n = g.nodes[size_t(i)];
    for (int& v : n.inputs) v = local(v);
    for (int& v : n.outputs) v = local(v);
    sub->nodes.push_back(std::move(n));
  }
  for (int v : outputs) sub->outputs.push_back(local(v));
  return sub;
}

}  // namespace

int add_float_constant(ir::Graph& g, const std::string& name, const Tensor& t) {
  if (!t.defined()) return -1;
  int v = g.add_value(name);
  g.values[size_t(v)].dtype = DType::Float32;
  g.initializers[v] = t.cast(DType::Float32);
  return v;
}

void set_encoder_attrs(ir::Node& n, const FamilyClaim& c, int64_t claim_id, ops::Activation activation,
                       const std::vector<float>& epsilons, const std::vector<float>& scales) {
  set_attr(n, "layers", c.layers);
  set_attr(n, "heads", c.heads);
  set_attr(n, "head_dim", c.head_dim);
  set_attr(n, "claim_id", claim_id);
  set_attr(n, "family", c.family);
  set_attr(n, "activation", int64_t(activation));
  set_attr(n, "epsilons", epsilons);
  set_attr(n, "scales", scales);
}

Tensor qkv_part(const Tensor& t, int64_t j) {
  if (!t.defined()) return Tensor();
  const int64_t d = t.shape().back() / 3, rows = t.rank() == 2 ? t.dim(0) : 1;
  std::vector<float> all = t.to_f32(), part;
  for (int64_t r = 0; r < rows; ++r)
    part.insert(part.end(), all.begin() + r * 3 * d + j * d, all.begin() + r * 3 * d + (j + 1) * d);
  return Tensor::from_f32(t.rank() == 2 ? Shape{rows, d} : Shape{d}, part);
}

ir::Node fused_node(const std::string& name, const char* op, int input) {
  ir::Node n;
  n.name = name;
  n.op_type = op;
  n.domain = kDomain;
  n.opset = 1;
  n.inputs.push_back(input);
  return n;
}

void replace_block(ir::Graph& g, const GraphIndex& gi, const Block& b, const std::vector<int>& taps, ir::Node fused) {
  std::vector<int64_t> tap_attr;
  for (int t : taps) {
    tap_attr.push_back(t);
    fused.outputs.push_back(b.layer_outputs[size_t(t)]);
  }
  set_attr(fused, "taps", tap_attr);
  fused.attrs["original"].kind = ir::Attribute::Kind::Graph;
  fused.attrs["original"].g = original_subgraph(g, gi, b, fused.outputs, fused.name + "/original");
  std::vector<ir::Node> kept;
  const int first = *b.nodes.begin();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (int(i) == first) kept.push_back(fused);
    if (!b.nodes.count(int(i))) kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
}

}  // namespace kestrel::families

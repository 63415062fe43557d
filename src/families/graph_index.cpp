#include "families/graph_index.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <unordered_set>

#include "ops/evaluate.h"

namespace kestrel::families {

GraphIndex::GraphIndex(const ir::Graph& g)
    : g_(g), producer_(g.values.size(), -1), readers_(g.values.size()), escapes_(g.values.size(), false) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int v : g.nodes[i].inputs)
      if (v >= 0) readers_[size_t(v)].push_back(int(i));
    for (int v : g.nodes[i].outputs)
      if (v >= 0) producer_[size_t(v)] = int(i);
    for (const std::string& name : ir::implicit_reads(g.nodes[i])) {
      int v = g.find(name);
      if (v >= 0) escapes_[size_t(v)] = true;
    }
  }
  for (int v : g.outputs) escapes_[size_t(v)] = true;
}

const ir::Node* GraphIndex::producer(int v) const {
  int i = producer_index(v);
  return i < 0 ? nullptr : &g_.nodes[size_t(i)];
}

const Tensor* GraphIndex::constant(int v) const {
  if (v < 0) return nullptr;
  auto it = g_.initializers.find(v);
  return it == g_.initializers.end() ? nullptr : &it->second;
}

std::optional<double> GraphIndex::scalar(int v) const {
  const Tensor* t = constant(v);
  if (!t || t->numel() != 1 || !dtype_is_float(t->dtype())) return std::nullopt;
  return double(t->to_f32()[0]);
}

std::vector<const ir::Node*> GraphIndex::data_readers(int v) const {
  std::vector<const ir::Node*> r;
  for (int i : readers_[size_t(v)])
    if (!shape_only(g_.nodes[size_t(i)])) r.push_back(&g_.nodes[size_t(i)]);
  return r;
}

const ir::Node* GraphIndex::only_data_reader(int v) const {
  auto r = data_readers(v);
  return r.size() == 1 && !escapes_[size_t(v)] ? r[0] : nullptr;
}

std::optional<double> GraphIndex::scalar_factor(const ir::Node& n, int v) const {
  if ((n.op_type != "Mul" && n.op_type != "Div") || !n.domain.empty() || n.inputs.size() != 2) return std::nullopt;
  const int other = n.inputs[0] == v ? n.inputs[1] : n.inputs[0];
  std::optional<double> c = scalar(other);
  if (!c || *c == 0 || (n.op_type == "Div" && n.inputs[1] != other)) return std::nullopt;
  return n.op_type == "Mul" ? *c : 1.0 / *c;
}

const ir::Node* GraphIndex::only_reader(int v, const std::string& op) const {
  if (v < 0 || readers_[size_t(v)].size() != 1 || escapes_[size_t(v)]) return nullptr;
  const ir::Node& n = g_.nodes[size_t(readers_[size_t(v)][0])];
  return n.op_type == op && n.domain.empty() ? &n : nullptr;
}

std::vector<int64_t> GraphIndex::reshape_target(const ir::Node& reshape) const {
  if (reshape.inputs.size() < 2) return {};
  int s = reshape.inputs[1];
  if (const Tensor* t = constant(s)) return t->to_i64();
  const ir::Node* cat = producer(s);
  if (!cat || cat->op_type != "Concat") return {};
  std::vector<int64_t> dims;
  for (int v : cat->inputs) {
    if (const Tensor* t = constant(v)) {
      for (int64_t d : t->to_i64()) dims.push_back(d);
    } else {
      dims.push_back(kUnknownDim);  // a computed piece: assume one element (Unsqueeze of a Gather)
    }
  }
  return dims;
}

}  // namespace kestrel::families

namespace kestrel::families {

std::set<int> data_descendants(const GraphIndex& gi, int v, size_t limit) {
  std::set<int> seen;
  std::deque<int> q{v};
  while (!q.empty() && seen.size() < limit) {
    int cur = q.front();
    q.pop_front();
    for (const ir::Node* r : gi.data_readers(cur))
      if (seen.insert(gi.index_of(r)).second)
        for (int o : r->outputs)
          if (o >= 0) q.push_back(o);
  }
  return seen;
}

std::set<int> data_ancestors(const GraphIndex& gi, int v, size_t limit) {
  std::set<int> seen;
  std::deque<int> q{v};
  while (!q.empty() && seen.size() < limit) {
    int p = gi.producer_index(q.front());
    q.pop_front();
    if (p < 0 || !seen.insert(p).second) continue;
    if (GraphIndex::shape_only(gi.node(p))) continue;
    for (int in : gi.node(p).inputs)
      if (in >= 0) q.push_back(in);
  }
  return seen;
}

std::vector<int> nodes_leading_to(const GraphIndex& gi, const std::set<int>& from, int v) {
  const std::set<int> before = data_ancestors(gi, v, 4000);
  std::vector<int> region;
  for (int i : from)
    if (before.count(i)) region.push_back(i);
  return region;
}

std::optional<double> shape_derived_scalar(const GraphIndex& gi, int v, int64_t last_dim) {
  std::set<int> nodes = data_ancestors(gi, v, 64);
  if (nodes.empty() || nodes.size() >= 64) return std::nullopt;
  bool reads_shape = false;
  for (int i : nodes) {
    const ir::Node& n = gi.node(i);
    if (!n.domain.empty()) return std::nullopt;
    if (GraphIndex::shape_only(n)) {
      if (n.op_type != "Shape") return std::nullopt;
      reads_shape = true;
      continue;
    }
    for (int in : n.inputs)  // every leaf is a constant
      if (in >= 0 && !gi.constant(in) && !nodes.count(gi.producer_index(in))) return std::nullopt;
  }
  if (!reads_shape) return std::nullopt;
  auto evaluate = [&](int64_t filler) -> std::optional<double> {
    std::map<int, Tensor> values;
    for (int i : nodes) {  // index order is topological
      const ir::Node& n = gi.node(i);
      std::vector<Tensor> out;
      if (n.op_type == "Shape") {
        std::vector<int64_t> dims{filler, filler + 2, filler + 4, last_dim};
        const int64_t r = 4;
        auto clamp = [r](int64_t a) { return std::clamp(a < 0 ? a + r : a, int64_t(0), r); };
        const int64_t start = clamp(n.attr_i("start", 0)), end = clamp(n.attr_i("end", r));
        out.push_back(Tensor::from_i64(std::vector<int64_t>(dims.begin() + start, dims.begin() + std::max(start, end))));
      } else {
        std::vector<Tensor> in;
        for (int x : n.inputs) {
          if (x < 0) in.emplace_back();
          else if (const Tensor* c = gi.constant(x)) in.push_back(*c);
          else in.push_back(values.at(x));
        }
        try {
          out = ops::evaluate_node(n, in);
        } catch (const Error&) {
          return std::nullopt;
        }
      }
      for (size_t k = 0; k < n.outputs.size() && k < out.size(); ++k)
        if (n.outputs[k] >= 0) values[n.outputs[k]] = out[k];
    }
    auto it = values.find(v);
    if (it == values.end() || it->second.numel() != 1) return std::nullopt;
    return double(it->second.cast(DType::Float32).to_f32()[0]);
  };
  std::optional<double> a = evaluate(3), b = evaluate(11);
  if (!a || !b || *a != *b || !std::isfinite(*a)) return std::nullopt;
  return a;
}

}  // namespace kestrel::families

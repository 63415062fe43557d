#include "families/graph_index.h"

#include <unordered_set>

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

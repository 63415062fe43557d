// Who produces and who reads each value of a graph, and what is constant:
// what the family matchers walk. Built once per claim pass; the graph must
// not change while an index of it is alive.
#pragma once
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kestrel::families {

class GraphIndex {
 public:
  explicit GraphIndex(const ir::Graph& g);

  const ir::Graph& graph() const { return g_; }
  // The node writing value v, or null (graph input, initializer, outer value).
  const ir::Node* producer(int v) const;
  int producer_index(int v) const { return v < 0 ? -1 : producer_[size_t(v)]; }
  // Indices of the nodes reading v (a node reading it twice is listed twice).
  const std::vector<int>& readers(int v) const { return readers_[size_t(v)]; }
  // True when v is a graph output or a subgraph reads it by name.
  bool escapes(int v) const { return escapes_[size_t(v)]; }
  const ir::Node& node(int i) const { return g_.nodes[size_t(i)]; }
  // True when v is one of the graph's inputs.
  bool is_graph_input(int v) const { return std::find(g_.inputs.begin(), g_.inputs.end(), v) != g_.inputs.end(); }

  // The initializer behind v, or null.
  const Tensor* constant(int v) const;
  // A constant holding one number (any shape of one element), as double.
  std::optional<double> scalar(int v) const;
  // True for Shape and Size: they read a value's shape, never its data.
  static bool shape_only(const ir::Node& n) { return n.op_type == "Shape" || n.op_type == "Size"; }
  // v's readers other than Shape/Size (exporters read shapes of many values
  // to build Reshape targets; those helpers are absorbed with a claimed block).
  std::vector<const ir::Node*> data_readers(int v) const;
  // v's single data reader, or null (also when a subgraph or the graph's outputs see v).
  const ir::Node* only_data_reader(int v) const;
  // The factor a Mul or Div node applies to v when the other operand is a
  // nonzero scalar constant (v * c, c * v, v / c), else nullopt.
  std::optional<double> scalar_factor(const ir::Node& n, int v) const;
  // The node of type `op` among v's readers when it is v's only reader.
  const ir::Node* only_reader(int v, const std::string& op) const;
  int index_of(const ir::Node* n) const { return int(n - g_.nodes.data()); }

  // A Reshape's target as far as it is known: the constant shape input, or
  // a Concat of one-element pieces (constants give their value, computed
  // ones give kUnknownDim). Empty when neither.
  static constexpr int64_t kUnknownDim = INT64_MIN;
  std::vector<int64_t> reshape_target(const ir::Node& reshape) const;

 private:
  const ir::Graph& g_;
  std::vector<int> producer_;
  std::vector<std::vector<int>> readers_;
  std::vector<bool> escapes_;
};

// Nodes reachable from v along data edges (never through a Shape), at most `limit`.
std::set<int> data_descendants(const GraphIndex& gi, int v, size_t limit);
// Nodes v depends on along data edges (a Shape's input is not followed), at most `limit`.
std::set<int> data_ancestors(const GraphIndex& gi, int v, size_t limit);

// The nodes of `from` (data descendants of a projection, in index order)
// that value v depends on: the attention between that projection and the
// one reading v.
std::vector<int> nodes_leading_to(const GraphIndex& gi, const std::set<int>& from, int v);

// A scalar an exporter computes from tensor shapes (torch's scaled dot-product
// attention writes its scale as 1/sqrt(q.shape[-1]) in nodes): its value when
// every Shape it reads sees a tensor whose last dimension is `last_dim`. The
// other dimensions must not matter: it is evaluated with two different sets
// of them and both must agree. nullopt when v depends on anything else.
std::optional<double> shape_derived_scalar(const GraphIndex& gi, int v, int64_t last_dim);

}  // namespace kestrel::families

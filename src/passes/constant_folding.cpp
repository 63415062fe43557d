#include <set>

#include "ops/evaluate.h"
#include "passes/passes.h"

namespace kestrel::passes {
namespace {

// Ops whose output is not a function of their inputs.
const std::set<std::string> kNondeterministic = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                 "RandomUniformLike", "Multinomial", "Bernoulli"};
// Folding must not turn a small graph into a huge one (ConstantOfShape, Expand, Tile).
constexpr size_t kMaxFoldedBytes = size_t(64) << 20;

bool has_subgraph(const ir::Node& n) {
  for (const auto& [k, a] : n.attrs)
    if (a.g) return true;
  return false;
}

// The exact shape of value v if it is known for every run, else false.
// Only a top-level graph's inputs are checked against their declared dims
// when bound; a subgraph's (Loop body) are not, so they are never exact.
bool exact_shape(const ir::Graph& g, int v, Shape& out, bool inputs_checked) {
  if (auto it = g.initializers.find(v); it != g.initializers.end()) {
    out = it->second.shape();
    return true;
  }
  // Graph inputs are checked against their declared dims when bound, so fixed dims are exact.
  bool is_input = inputs_checked && std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end();
  const auto& shape = g.values[size_t(v)].shape;
  if (!is_input || !shape) return false;
  out.clear();
  for (const auto& d : *shape) {
    if (!d.known()) return false;
    out.push_back(d.value);
  }
  return true;
}

// Shape (with opset-15 start/end) and Size of a tensor of known shape.
bool fold_shape_query(const ir::Graph& g, const ir::Node& n, Tensor& result, bool inputs_checked) {
  if (n.domain != "" || (n.op_type != "Shape" && n.op_type != "Size") || n.inputs.empty() || n.inputs[0] < 0)
    return false;
  Shape s;
  if (!exact_shape(g, n.inputs[0], s, inputs_checked)) return false;
  if (n.op_type == "Size") {
    try {
      result = Tensor::scalar_i64(shape_numel(s));
    } catch (const Error&) {
      return false;  // a declared shape past int64: no input can match it, and binding one says so
    }
    return true;
  }
  int64_t r = int64_t(s.size());
  auto clamp = [r](int64_t a) { return std::clamp(a < 0 ? a + r : a, int64_t(0), r); };
  int64_t start = clamp(n.attr_i("start", 0)), end = clamp(n.attr_i("end", r));
  result = Tensor::from_i64(std::vector<int64_t>(s.begin() + start, s.begin() + std::max(start, end)));
  return true;
}

}  // namespace

int fold_constants(ir::Graph& g, bool is_subgraph) {
  std::vector<ir::Node> kept;
  int folded = 0;
  for (ir::Node& n : g.nodes) {
    bool foldable = !has_subgraph(n) && !kNondeterministic.count(n.op_type) && !n.outputs.empty();
    std::vector<Tensor> in;
    for (int v : n.inputs) {
      if (v < 0) { in.emplace_back(); continue; }
      auto it = g.initializers.find(v);
      if (it == g.initializers.end()) { foldable = false; break; }
      in.push_back(it->second);
    }
    std::vector<Tensor> out;
    Tensor shape_result;
    if (fold_shape_query(g, n, shape_result, !is_subgraph)) {
      out.push_back(shape_result);
    } else if (foldable && ops::find_op(n.domain, n.op_type, n.opset)) {
      try {
        out = ops::evaluate_node(n, in, 1, kMaxFoldedBytes);
      } catch (const Error&) {
        out.clear();  // leave it to run time, where the error (if any) is reported in context
      }
    }
    bool ok = out.size() == n.outputs.size();
    for (size_t i = 0; ok && i < out.size(); ++i) ok = out[i].defined() && out[i].nbytes() <= kMaxFoldedBytes;
    if (!ok) {
      kept.push_back(std::move(n));
      continue;
    }
    for (size_t i = 0; i < out.size(); ++i) {
      int v = n.outputs[i];
      if (v < 0) continue;
      g.initializers[v] = out[i];
      g.values[size_t(v)].dtype = out[i].dtype();
    }
    ++folded;
  }
  g.nodes = std::move(kept);
  return folded;
}


}  // namespace kestrel::passes

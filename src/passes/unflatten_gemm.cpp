// Undoes ONNX Runtime's MatMulAddFusion: a linear layer on a 3-D activation
// (MatMul by a constant, then Add of a bias), which ONNX Runtime rewrites as
// Reshape to 2-D -> Gemm -> Reshape back (often merged with the Reshape that
// followed, into the heads' split). Graphs take this form when ONNX Runtime
// hands them over (its basic optimizations run before any execution
// provider sees the graph) or saves them optimized. The transformer
// families recognize linear layers as MatMul [+ Add]; this restores that
// form, with the same arithmetic.
#include <algorithm>
#include <numeric>

#include "passes/graph_uses.h"
#include "passes/passes.h"

namespace kestrel::passes {
namespace {

// The static shape of v, or empty when any dim is unknown.
std::vector<int64_t> static_shape(const ir::Graph& g, int v) {
  const auto& shape = g.values[size_t(v)].shape;
  if (!shape) return {};
  std::vector<int64_t> dims;
  for (const ir::Dim& d : *shape) {
    if (!d.known()) return {};
    dims.push_back(d.value);
  }
  return dims;
}

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  return std::accumulate(v.begin() + long(from), v.begin() + long(to), int64_t(1), std::multiplies<>());
}

std::string fresh_name(const ir::Graph& g, const std::string& stem) {
  std::string name = stem;
  for (int k = 2; g.find(name) >= 0; ++k) name = stem + "_" + std::to_string(k);
  return name;
}

int new_value(ir::Graph& g, const std::string& stem, DType dtype, const std::vector<int64_t>& dims) {
  const int v = g.add_value(fresh_name(g, stem));
  g.values[size_t(v)].dtype = dtype;
  std::vector<ir::Dim> shape;
  for (int64_t d : dims) shape.push_back(ir::Dim{d, ""});
  g.values[size_t(v)].shape = shape;
  return v;
}

int new_constant(ir::Graph& g, const std::string& stem, Tensor t) {
  const int v = new_value(g, stem, t.dtype(), t.shape());
  g.initializers[v] = std::move(t);
  return v;
}

Tensor transposed(const Tensor& w) {  // [N, K] float32 -> [K, N]
  const int64_t n = w.shape()[0], k = w.shape()[1];
  Tensor t(DType::Float32, {k, n});
  const float* s = w.data<float>();
  float* d = t.data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) d[j * n + i] = s[i * k + j];
  return t;
}

}  // namespace

int unflatten_gemms(ir::Graph& g) {
  GraphUses uses(g);
  std::vector<int> reader(g.values.size(), -1);  // the node reading a value, where one does
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs)
      if (v >= 0) reader[size_t(v)] = int(i);
  std::vector<std::vector<ir::Node>> rewrite(g.nodes.size());  // per Gemm replaced: its nodes
  std::vector<bool> removed(g.nodes.size(), false);
  int count = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& gemm = g.nodes[i];
    if (gemm.op_type != "Gemm" || !gemm.domain.empty() || gemm.inputs.size() < 2 || gemm.outputs.size() != 1) continue;
    if (gemm.attr_i("transA", 0) || gemm.attr_f("alpha", 1.f) != 1.f || gemm.attr_f("beta", 1.f) != 1.f) continue;
    const Tensor* w = constant(g, gemm.inputs[1]);
    if (!w || w->rank() != 2 || w->dtype() != DType::Float32) continue;
    const bool trans_b = gemm.attr_i("transB", 0) != 0;
    const int64_t k = w->shape()[trans_b ? 1 : 0], n = w->shape()[trans_b ? 0 : 1];
    const Tensor* bias = gemm.inputs.size() > 2 ? constant(g, gemm.inputs[2]) : nullptr;
    if (gemm.inputs.size() > 2 && gemm.inputs[2] >= 0 && (!bias || bias->numel() != n || bias->dtype() != DType::Float32))
      continue;
    // Reshape (only into this Gemm) -> Gemm -> Reshape (its only reader).
    const int a = gemm.inputs[0], y = gemm.outputs[0];
    const int before = uses.producer(a);
    if (before < 0 || removed[size_t(before)] || !uses.private_to_one_reader(a) || !uses.private_to_one_reader(y))
      continue;
    const ir::Node& r1 = g.nodes[size_t(before)];
    const int after = reader[size_t(y)];
    if (r1.op_type != "Reshape" || !r1.domain.empty() || after < 0) continue;
    const ir::Node& r2 = g.nodes[size_t(after)];
    if (r2.op_type != "Reshape" || !r2.domain.empty() || r2.inputs.empty() || r2.inputs[0] != y) continue;
    const Tensor* s2t = r2.inputs.size() > 1 ? constant(g, r2.inputs[1]) : nullptr;
    if (!s2t || s2t->dtype() != DType::Int64) continue;
    const std::vector<int64_t> s2 = s2t->to_i64();
    if (s2.empty() || std::any_of(s2.begin(), s2.end(), [](int64_t d) { return d <= 0; })) continue;
    const int64_t total = product(s2, 0, s2.size());
    if (total % n) continue;
    const int64_t m = total / n;

    // The MatMul reads the Reshape's input itself where its last dim is K
    // (a linear layer on a [.., K] activation), else that input reshaped to
    // the output's leading dims and K.
    std::vector<ir::Node> u;  // what replaces the Gemm: [Reshape,] MatMul [, Add]
    const int x = r1.inputs[0];
    const std::vector<int64_t> xs = static_shape(g, x);
    int matmul_in = -1;
    std::vector<int64_t> out_dims;
    if (xs.size() >= 2 && xs.back() == k && product(xs, 0, xs.size() - 1) == m) {
      matmul_in = x;
      out_dims.assign(xs.begin(), xs.end() - 1);
    } else if (s2.back() == n && s2.size() >= 2) {
      out_dims.assign(s2.begin(), s2.end() - 1);
      std::vector<int64_t> s1 = out_dims;
      s1.push_back(k);
      ir::Node reshape = r1;
      reshape.inputs[1] = new_constant(g, r1.name + "/unflattened_shape", Tensor::from_i64(s1));
      reshape.outputs[0] = new_value(g, r1.name + "/unflattened", w->dtype(), s1);
      u.push_back(reshape);
      matmul_in = reshape.outputs[0];
    } else {
      continue;
    }
    out_dims.push_back(n);
    const bool same_as_after = out_dims == s2;

    ir::Node mm;
    mm.name = gemm.name + "/MatMul";
    mm.op_type = "MatMul";
    mm.opset = gemm.opset;
    const int weight = trans_b ? new_constant(g, gemm.name + "/weight_t", transposed(*w)) : gemm.inputs[1];
    const int result = same_as_after ? r2.outputs[0] : new_value(g, gemm.name + "/unflattened_out", w->dtype(), out_dims);
    const int product_value = bias ? new_value(g, gemm.name + "/MatMul_out", w->dtype(), out_dims) : result;
    mm.inputs = {matmul_in, weight};
    mm.outputs = {product_value};
    u.push_back(mm);
    if (bias) {
      ir::Node add;
      add.name = gemm.name + "/Add";
      add.op_type = "Add";
      add.opset = gemm.opset;
      const int b = bias->rank() == 1 ? gemm.inputs[2] : new_constant(g, gemm.name + "/bias", bias->reshaped({n}));
      add.inputs = {product_value, b};
      add.outputs = {result};
      u.push_back(add);
    }
    // The Reshape before always goes (the MatMul reads its input, or a
    // Reshape made above); the one after goes when it would change nothing.
    removed[size_t(before)] = true;
    if (same_as_after) removed[size_t(after)] = true;
    else g.nodes[size_t(after)].inputs[0] = result;
    rewrite[i] = std::move(u);
    ++count;
  }
  if (!count) return 0;
  std::vector<ir::Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!rewrite[i].empty()) {
      for (ir::Node& n : rewrite[i]) nodes.push_back(std::move(n));
    } else if (!removed[i]) {
      nodes.push_back(std::move(g.nodes[i]));
    }
  }
  g.nodes = std::move(nodes);
  return count;
}

}  // namespace kestrel::passes

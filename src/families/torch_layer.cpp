#include "families/torch_layer.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "families/block.h"

namespace kestrel::families {
namespace {

// A one-element constant equal to 0, of any numeric type (the mask's
// `input == 0` compares with an integer constant).
bool constant_zero(const GraphIndex& gi, int v) {
  const Tensor* t = gi.constant(v);
  return t && t->numel() == 1 && t->to_f32()[0] == 0.f;
}

// A value that is zero everywhere: a constant, ConstantOfShape of 0, or an Expand of a constant 0.
bool zeros(const GraphIndex& gi, int v) {
  if (std::optional<double> c = gi.scalar(v)) return *c == 0;
  const ir::Node* p = gi.producer(v);
  if (!p) return false;
  if (p->op_type == "ConstantOfShape") {
    const ir::Attribute* a = p->attr("value");
    return !a || (a->t.defined() && a->t.to_f32().at(0) == 0.f);
  }
  if (p->op_type == "Expand") return zeros(gi, p->inputs[0]);
  return false;
}

// The graph input a torch key padding mask is built from: m reaches the
// scores through Reshape/Expand/Unsqueeze/Cast from Where(input == 0, -inf, 0);
// -1 when it is not that.
int key_padding_mask_input(const GraphIndex& gi, int m, std::vector<int>& nodes) {
  const ir::Node* n = gi.producer(m);
  std::vector<int> path;
  while (n && (n->op_type == "Reshape" || n->op_type == "Expand" || n->op_type == "Unsqueeze" || n->op_type == "Cast")) {
    path.push_back(gi.index_of(n));
    n = gi.producer(n->inputs[0]);
  }
  if (!n || n->op_type != "Where") return -1;
  std::optional<double> masked = gi.scalar(n->inputs[1]);
  if (!masked || !(*masked < -1e4) || !zeros(gi, n->inputs[2])) return -1;
  const ir::Node* c = gi.producer(n->inputs[0]);
  if (c && c->op_type == "Cast") c = gi.producer(c->inputs[0]);
  if (!c || c->op_type != "Equal") return -1;
  for (int i : {0, 1}) {
    if (constant_zero(gi, c->inputs[size_t(1 - i)]) && gi.is_graph_input(c->inputs[size_t(i)])) {
      nodes.insert(nodes.end(), path.begin(), path.end());
      return c->inputs[size_t(i)];
    }
  }
  return -1;
}

// out_proj: MatMul by a constant [D, D], or Gemm (alpha = beta = 1) by one
// (transposed with transB) with an optional constant [D] bias. Sets w as [in, out].
bool output_projection(const GraphIndex& gi, const ir::Node& n, int64_t d, Tensor& w, Tensor& b) {
  if (n.op_type == "MatMul") {
    const Tensor* t = projection_weight(gi, &n, n.inputs[0], d, d);
    if (!t) return false;
    w = t->cast(DType::Float32);
    return true;
  }
  if (n.op_type != "Gemm" || n.attr_i("transA", 0) || n.attr_f("alpha", 1.f) != 1.f || n.attr_f("beta", 1.f) != 1.f)
    return false;
  const Tensor* t = gi.constant(n.inputs.size() > 1 ? n.inputs[1] : -1);
  if (!t || t->rank() != 2 || t->dim(0) != d || t->dim(1) != d) return false;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Tensor* c = gi.constant(n.inputs[2]);
    if (!c || c->numel() != d) return false;
    b = c->cast(DType::Float32).reshaped({d});
  }
  Tensor f = t->cast(DType::Float32);
  if (n.attr_i("transB", 0)) {  // [out, in] -> [in, out]
    std::vector<float> v = f.to_f32(), tr(v.size());
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < d; ++j) tr[size_t(j * d + i)] = v[size_t(i * d + j)];
    f = Tensor::from_f32({d, d}, tr);
  }
  w = f;
  return true;
}

// torch's MultiheadAttention splits the stacked projection with
// proj[0], proj[1], proj[2]: three Gathers (axis 0, indices 0, 1, 2) of one value.
bool gathers_qkv(const GraphIndex& gi, const std::set<int>& nodes) {
  for (int i : nodes) {
    const ir::Node& n = gi.node(i);
    if (n.op_type != "Gather") continue;
    std::set<int64_t> picked;
    for (const ir::Node* r : gi.data_readers(n.inputs[0])) {
      const Tensor* idx = r->op_type == "Gather" && r->attr_i("axis", 0) == 0 ? gi.constant(r->inputs[1]) : nullptr;
      if (idx && idx->numel() == 1 && idx->rank() == 0) picked.insert(idx->to_i64()[0]);
    }
    if (picked == std::set<int64_t>{0, 1, 2}) return true;
  }
  return false;
}

}  // namespace

std::optional<EncoderLayer> match_torch_layer(const GraphIndex& gi, int x, std::string& why) {
  EncoderLayer L;
  L.input = x;
  auto no = [&](const std::string& reason) {
    why = reason;
    return std::nullopt;
  };
  const ir::Node* ln1 = nullptr;
  for (const ir::Node* r : gi.data_readers(x))
    if (r->op_type == "LayerNormalization" && r->inputs[0] == x) ln1 = r;
  std::string reason;
  if (!read_layer_norm(gi, ln1, L.norm1, reason)) return no(reason);
  L.nodes.push_back(gi.index_of(ln1));
  const int64_t d = L.norm1.scale.numel();
  int y = ln1->outputs[0];
  const ir::Node* n = gi.only_data_reader(y);
  if (n && n->op_type == "Transpose" && n->attr_ints("perm") == std::vector<int64_t>{1, 0, 2}) {
    L.nodes.push_back(gi.index_of(n));
    y = n->outputs[0];
    n = gi.only_data_reader(y);
  }
  const Tensor* w_in = projection_weight(gi, n, y, d, 3 * d);
  if (!w_in) return no("no in_proj [D, 3D] after the LayerNorm");
  const Tensor w_qkv = w_in->cast(DType::Float32);
  Tensor b_qkv;
  const int qkv = through_bias(gi, n, b_qkv, L.nodes);
  std::set<int> downstream = data_descendants(gi, qkv, 600);
  if (!splits_into_qkv(gi, qkv) && !gathers_qkv(gi, downstream))
    return no("the in_proj output does not split into query, key and value");
  const ir::Node* out = nullptr;
  for (int i : downstream)
    if (output_projection(gi, gi.node(i), d, L.w_out, L.b_out)) {
      out = &gi.node(i);
      break;
    }
  if (!out) return no("no out_proj after the in_proj");
  const std::vector<int> region = nodes_leading_to(gi, downstream, out->inputs[0]);
  static const std::set<std::string> kAllowed = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Gather", "Split",
                                                 "Mul", "Div", "Add", "MatMul", "Softmax", "Cast", "Identity"};
  const ir::Node* softmax = nullptr;
  std::vector<const ir::Node*> matmuls;
  for (int i : region) {
    const ir::Node& r = gi.node(i);
    if (!r.domain.empty() || !kAllowed.count(r.op_type)) return no("attention contains " + r.op_type);
    if (r.op_type == "Softmax") {
      if (softmax) return no("attention has two Softmaxes");
      softmax = &r;
    }
    if (r.op_type == "MatMul") matmuls.push_back(&r);
  }
  if (!softmax || matmuls.size() != 2) return no("attention is not one score product, a Softmax and one context product");
  if (const int64_t axis = softmax->attr_i("axis", -1); axis != -1 && axis != 3) return no("Softmax is not over the keys");
  const ir::Node* scores = matmuls[0];
  if (matmuls[1]->inputs[0] != softmax->outputs[0]) return no("the attention weights do not multiply the values");
  // Heads: the [batch, heads, tokens, head_dim] Reshapes of q, k and v.
  for (int i : region) {
    const ir::Node& r = gi.node(i);
    if (r.op_type != "Reshape") continue;
    std::vector<int64_t> t = gi.reshape_target(r);
    if (t.size() != 4 || t[1] <= 0 || d % t[1] != 0 || (t[3] > 0 && t[3] != d / t[1])) continue;
    if (L.heads > 0 && L.heads != t[1]) return no("query, key and value split into different head counts");
    L.heads = t[1];
  }
  if (L.heads <= 0) return no("the head count cannot be read from the [batch, heads, tokens, head_dim] Reshapes");
  L.head_dim = d / L.heads;
  // The Softmax reads the (scaled) scores, plus a key padding mask.
  std::set<int> in_region(region.begin(), region.end());
  const ir::Node* add = gi.producer(softmax->inputs[0]);
  if (add && add->op_type == "Add" && in_region.count(gi.index_of(add))) {
    const int a = add->inputs[0], b = add->inputs[1];
    const int m = in_region.count(gi.producer_index(a)) ? b : a;
    L.mask_input = key_padding_mask_input(gi, m, L.nodes);
    if (L.mask_input < 0) return no("scores get an additive term that is not a key padding mask");
  }
  std::optional<double> scale = attention_scale(gi, region, qkv, *scores, *softmax, L.head_dim, why);
  if (!scale) return std::nullopt;
  L.scale = float(*scale);
  L.nodes.insert(L.nodes.end(), region.begin(), region.end());
  L.nodes.push_back(gi.index_of(out));
  int o = out->outputs[0];
  if (out->op_type == "MatMul") o = through_bias(gi, out, L.b_out, L.nodes);
  if (!L.b_out.defined()) L.b_out = Tensor::from_f32({d}, std::vector<float>(size_t(d), 0.f));
  const ir::Node* res1 = nullptr;
  for (int steps = 0; steps < 4 && !res1; ++steps) {
    const ir::Node* r = gi.only_data_reader(o);
    if (!r || !r->domain.empty()) return no("the attention output is read by more than one op");
    if (r->op_type == "Add") {
      res1 = r;
    } else if (r->op_type == "Reshape" || r->op_type == "Transpose") {
      L.nodes.push_back(gi.index_of(r));
      o = r->outputs[0];
    } else {
      return no("the attention output goes through " + r->op_type);
    }
  }
  if (!res1 || (res1->inputs[0] != x && res1->inputs[1] != x)) return no("the attention output is not added to the layer input");
  L.nodes.push_back(gi.index_of(res1));
  MlpBlock mlp;
  if (!match_mlp(gi, res1->outputs[0], d, mlp, L.nodes, why)) return std::nullopt;
  if (mlp.layer_scale.defined()) return no("a LayerScale (not part of torch's layer)");
  L.norm2 = mlp.norm;
  L.w_fc1 = mlp.w_fc1, L.b_fc1 = mlp.b_fc1, L.w_fc2 = mlp.w_fc2, L.b_fc2 = mlp.b_fc2;
  L.act = mlp.act;
  L.output = mlp.output;
  if (!b_qkv.defined()) b_qkv = Tensor::from_f32({3 * d}, std::vector<float>(size_t(3 * d), 0.f));
  L.w_q = qkv_part(w_qkv, 0), L.w_k = qkv_part(w_qkv, 1), L.w_v = qkv_part(w_qkv, 2);
  L.b_q = qkv_part(b_qkv, 0), L.b_k = qkv_part(b_qkv, 1), L.b_v = qkv_part(b_qkv, 2);
  std::sort(L.nodes.begin(), L.nodes.end());
  L.nodes.erase(std::unique(L.nodes.begin(), L.nodes.end()), L.nodes.end());
  return L;
}

}  // namespace kestrel::families

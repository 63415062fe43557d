#include "families/rope_layer.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>

namespace kestrel::families {

std::optional<RopeLayer> match_rope_layer(const GraphIndex& gi, int x, std::string& why) {
  RopeLayer L;
  L.input = x;
  auto no = [&](const std::string& reason) {
    why = reason;
    return std::nullopt;
  };
  // x -> [LayerNorm] -> QKV projection [D, 3D]
  const ir::Node* qkv_mm = nullptr;
  const ir::Node* ln1 = nullptr;
  auto is_qkv = [&](const ir::Node* n, int v) {
    const Tensor* w = projection_weight(gi, n, v, 0, 0);
    return w && w->dim(1) == 3 * w->dim(0);
  };
  for (const ir::Node* r : gi.data_readers(x)) {
    if (is_qkv(r, x)) qkv_mm = r;
    if (r->op_type == "LayerNormalization" && r->inputs[0] == x)
      for (const ir::Node* rr : gi.data_readers(r->outputs[0]))
        if (is_qkv(rr, r->outputs[0])) ln1 = r, qkv_mm = rr;
  }
  if (!qkv_mm) return no("no fused QKV projection reads the layer input");
  if (ln1) {
    std::string reason;
    if (!read_layer_norm(gi, ln1, L.norm1, reason)) return no(reason);
    L.nodes.push_back(gi.index_of(ln1));
  }
  const int64_t d = gi.constant(qkv_mm->inputs[1])->dim(0);
  L.w_qkv = gi.constant(qkv_mm->inputs[1])->cast(DType::Float32);
  const int qkv = through_bias(gi, qkv_mm, L.b_qkv, L.nodes);
  if (!splits_into_qkv(gi, qkv)) {
    why.clear();  // not a QKV projection at all: nothing to report
    return std::nullopt;
  }

  // The output projection: the nearest MatMul of a constant [D, D] downstream.
  std::set<int> downstream = data_descendants(gi, qkv, 400);
  const ir::Node* out_mm = nullptr;
  for (int i : downstream) {  // index order is topological: the first is the nearest
    const ir::Node& n = gi.node(i);
    if (n.op_type == "MatMul" && gi.constant(n.inputs[1]) && projection_weight(gi, &n, n.inputs[0], d, d)) {
      out_mm = &n;
      break;
    }
  }
  if (!out_mm) return no("no output projection after the QKV projection");
  // Attention: what the QKV projection feeds on the way to it.
  const std::vector<int> region = nodes_leading_to(gi, downstream, out_mm->inputs[0]);
  static const std::set<std::string> kAllowed = {"Reshape", "Transpose", "Split", "Squeeze", "Unsqueeze", "Slice",
                                                 "Gather", "Concat", "Neg", "Mul", "Div", "Add", "Sub", "Cast",
                                                 "MatMul", "Softmax", "Where", "IsNaN", "Identity"};
  const ir::Node* softmax = nullptr;
  std::vector<const ir::Node*> matmuls;
  std::set<int> in_region(region.begin(), region.end());
  for (int i : region) {
    const ir::Node& n = gi.node(i);
    if (n.op_type == "Einsum")
      return no("attention adds an Einsum term (a decomposed relative-position bias: the ViT-Det walk's)");
    if (!n.domain.empty() || !kAllowed.count(n.op_type)) return no("attention contains " + n.op_type);
    if (n.op_type == "Softmax") {
      if (softmax) return no("attention has two Softmaxes");
      softmax = &n;
    }
    if (n.op_type == "MatMul") matmuls.push_back(&n);
  }
  if (!softmax || matmuls.size() != 2) return no("attention is not one score product, a Softmax and one context product");
  const int64_t axis = softmax->attr_i("axis", -1);
  if (axis != -1 && axis != 3) return no("Softmax is not over the keys");
  const ir::Node* scores = matmuls[0];  // topological: scores come first
  L.heads = qkv_heads(gi, region, d);
  L.head_dim = L.heads > 0 ? d / L.heads : 0;
  if (L.heads <= 0) return no("the head count cannot be read from the QKV Reshape");
  // Scale: scalar Mul/Div on the way into the score product, and between it and the Softmax.
  std::set<int> into_scores = data_ancestors(gi, scores->outputs[0], 4000);
  std::set<int> score_to_softmax = data_descendants(gi, scores->outputs[0], 40);
  double scale = 1;
  for (int i : region) {
    const ir::Node& n = gi.node(i);
    if (n.op_type != "Mul" && n.op_type != "Div") continue;
    const bool on_score_path = into_scores.count(i) || (score_to_softmax.count(i) && gi.index_of(softmax) > i);
    if (!on_score_path) continue;
    const bool scalar_operand = gi.scalar(n.inputs[0]) || gi.scalar(n.inputs[1]);
    if (!scalar_operand) continue;  // the rotary tables multiply too
    std::optional<double> f = gi.scalar_factor(n, gi.scalar(n.inputs[0]) ? n.inputs[1] : n.inputs[0]);
    if (!f) return no("attention divides a constant by a value, or scales it by zero");
    scale *= *f;
  }
  L.scale = float(scale);
  // The mask: the Softmax's input is scores + Where(mask, 0, masked_score).
  const ir::Node* add = gi.producer(softmax->inputs[0]);
  if (add && add->op_type == "Add" && in_region.count(gi.index_of(add))) {
    const ir::Node* where = nullptr;
    for (int in : add->inputs)
      if (const ir::Node* p = gi.producer(in); p && p->op_type == "Where") where = p;
    if (!where) return no("scores get an additive bias that is not a mask");
    std::optional<double> keep = gi.scalar(where->inputs[1]), masked = gi.scalar(where->inputs[2]);
    if (!keep || !masked || *keep != 0) return no("the mask is not Where(mask, 0, a large negative)");
    L.masked_score = float(*masked);
    L.nodes.push_back(gi.index_of(where));
    // Which graph input it comes from, and the window if it is a sliding one.
    std::set<int> mask_ancestors = data_ancestors(gi, where->inputs[0], 4000);
    for (int i : mask_ancestors) {
      const ir::Node& n = gi.node(i);
      if (n.op_type == "LessOrEqual")
        if (const Tensor* w = gi.constant(n.inputs[1]); w && w->numel() == 1) L.window = int64_t(w->to_f32()[0]);
      for (int in : n.inputs)
        if (gi.is_graph_input(in) && !GraphIndex::shape_only(n))
          L.mask_input = in;
    }
    if (L.mask_input < 0) return no("the attention mask does not come from a graph input");
  } else if (gi.producer_index(softmax->inputs[0]) != gi.index_of(scores) && !score_to_softmax.count(gi.producer_index(softmax->inputs[0]))) {
    return no("scores reach the Softmax through something other than a scale or a mask");
  }
  // Rotary frequencies: a constant of head_dim / 2 floats behind the cos/sin tables.
  for (int i : region)
    for (int in : gi.node(i).inputs) {
      if (in < 0 || in == qkv || gi.constant(in) || in_region.count(gi.producer_index(in))) continue;
      for (int a : data_ancestors(gi, in, 400))
        for (int v : gi.node(a).inputs)
          if (const Tensor* c = gi.constant(v);
              c && L.inv_freq.empty() && dtype_is_float(c->dtype()) && c->numel() == L.head_dim / 2 && c->numel() > 1)
            L.inv_freq = c->to_f32();
    }
  if (L.inv_freq.empty()) return no("no rotary frequencies of head_dim / 2 values found");
  L.nodes.insert(L.nodes.end(), region.begin(), region.end());

  // Output projection, residual.
  L.w_out = gi.constant(out_mm->inputs[1])->cast(DType::Float32);
  int o = through_bias(gi, out_mm, L.b_out, L.nodes);
  const ir::Node* res1 = gi.only_data_reader(o);
  if (!res1 || res1->op_type != "Add" || (res1->inputs[0] != x && res1->inputs[1] != x))
    return no("the attention output is not added to the layer input");
  L.nodes.push_back(gi.index_of(res1));
  const int h = res1->outputs[0];
  // MLP: LayerNorm -> fc1 [D, 2F] -> act(first half) * second half -> fc2 [F, D] -> + h
  const ir::Node* ln2 = nullptr;
  for (const ir::Node* r : gi.data_readers(h))
    if (r->op_type == "LayerNormalization") ln2 = r;
  std::string reason;
  if (!read_layer_norm(gi, ln2, L.norm2, reason)) return no(reason);
  L.nodes.push_back(gi.index_of(ln2));
  const ir::Node* fc1 = gi.only_data_reader(ln2->outputs[0]);
  const Tensor* w1 = projection_weight(gi, fc1, ln2->outputs[0], d, 0);
  if (!w1 || w1->dim(1) % 2) return no("no gated fc1 of an even width after the MLP norm");
  const int64_t f = w1->dim(1) / 2;
  L.w_fc1 = w1->cast(DType::Float32);
  const int u = through_bias(gi, fc1, L.b_fc1, L.nodes);
  int first = -1, second = -1;
  auto halves = gi.data_readers(u);
  if (halves.size() == 1 && halves[0]->op_type == "Split" && halves[0]->outputs.size() == 2) {
    first = halves[0]->outputs[0], second = halves[0]->outputs[1];
    L.nodes.push_back(gi.index_of(halves[0]));
  } else if (halves.size() == 2 && halves[0]->op_type == "Slice" && halves[1]->op_type == "Slice") {
    for (const ir::Node* sl : halves) {
      const Tensor* start = gi.constant(sl->inputs[1]);
      (start && start->to_i64() == std::vector<int64_t>{0} ? first : second) = sl->outputs[0];
      L.nodes.push_back(gi.index_of(sl));
    }
  }
  if (first < 0 || second < 0) return no("fc1's output is not split into an activated half and a gate");
  const ir::Node* glu = gi.only_data_reader(second);
  if (!glu || glu->op_type != "Mul") return no("the gate half does not multiply the activated half");
  const int act_out = glu->inputs[0] == second ? glu->inputs[1] : glu->inputs[0];
  std::optional<Activation> act = identify_activation(gi, first, act_out, L.nodes, why);
  if (!act) return std::nullopt;
  L.act = *act;
  L.nodes.push_back(gi.index_of(glu));
  const ir::Node* fc2 = gi.only_data_reader(glu->outputs[0]);
  const Tensor* w2 = projection_weight(gi, fc2, glu->outputs[0], f, d);
  if (!w2) return no("no fc2 back to the model width");
  L.w_fc2 = w2->cast(DType::Float32);
  const int m = through_bias(gi, fc2, L.b_fc2, L.nodes);
  const ir::Node* res2 = gi.only_data_reader(m);
  if (!res2 || res2->op_type != "Add" || (res2->inputs[0] != h && res2->inputs[1] != h))
    return no("the MLP output is not added to the attention residual");
  L.nodes.push_back(gi.index_of(res2));
  L.output = res2->outputs[0];
  std::sort(L.nodes.begin(), L.nodes.end());
  L.nodes.erase(std::unique(L.nodes.begin(), L.nodes.end()), L.nodes.end());
  return L;
}

}  // namespace kestrel::families

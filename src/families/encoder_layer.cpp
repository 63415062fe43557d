// The encoder-layer walk (see encoder_layer.h). Every step checks the op,
// which input it reads, and that weights are constants of the right shape;
// any surprise ends the match with the reason, so nothing near-miss is claimed.
#include "families/encoder_layer.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace kestrel::families {

const Tensor* projection_weight(const GraphIndex& gi, const ir::Node* n, int v, int64_t rows, int64_t cols) {
  if (!n || n->op_type != "MatMul" || n->inputs.size() != 2 || n->inputs[0] != v) return nullptr;
  const Tensor* w = gi.constant(n->inputs[1]);
  if (!w || w->rank() != 2 || (rows && w->dim(0) != rows) || (cols && w->dim(1) != cols)) return nullptr;
  return w;
}

int through_bias(const GraphIndex& gi, const ir::Node* mm, Tensor& bias, std::vector<int>& nodes) {
  nodes.push_back(gi.index_of(mm));
  const int out = mm->outputs[0];
  const int64_t cols = gi.constant(mm->inputs[1])->dim(1);
  const ir::Node* add = gi.only_data_reader(out);
  if (!add || add->op_type != "Add") return out;
  const int other = add->inputs[0] == out ? add->inputs[1] : add->inputs[0];
  const Tensor* b = gi.constant(other);
  if (!b || b->numel() != cols || b->shape().back() != cols) return out;
  bias = b->cast(DType::Float32).reshaped({cols});
  nodes.push_back(gi.index_of(add));
  return add->outputs[0];
}

bool splits_into_qkv(const GraphIndex& gi, int v) {
  const ir::Node* split = gi.only_data_reader(v);
  if (!split) return false;
  if (split->op_type == "Split") return split->outputs.size() == 3;
  if (split->op_type != "Reshape") return false;
  std::vector<int64_t> t = gi.reshape_target(*split);
  return t.size() >= 4 && t[2] == 3;
}

int64_t qkv_heads(const GraphIndex& gi, const std::vector<int>& nodes, int64_t d) {
  int64_t heads = 0;
  for (int i : nodes) {
    const ir::Node& n = gi.node(i);
    if (n.op_type != "Reshape") continue;
    std::vector<int64_t> t = gi.reshape_target(n);
    if (t.size() != 5 || t[2] != 3) continue;
    int64_t h = t[3] > 0 ? t[3] : (t[3] == -1 && t[4] > 0 && d % t[4] == 0 ? d / t[4] : 0);
    if (h > 0 && d % h == 0 && (t[4] == -1 || t[4] == d / h)) heads = h;
  }
  return heads;
}

std::optional<double> attention_scale(const GraphIndex& gi, const std::vector<int>& region, int qkv,
                                      const ir::Node& scores, const ir::Node& softmax, int64_t head_dim,
                                      std::string& why) {
  const std::set<int> into_scores = data_ancestors(gi, scores.outputs[0], 4000);
  const std::set<int> into_softmax = data_ancestors(gi, softmax.inputs[0], 4000);
  const std::set<int> in_region(region.begin(), region.end());
  const int s = gi.index_of(&scores), sm = gi.index_of(&softmax);
  double scale = 1;
  for (int i : region) {
    const ir::Node& n = gi.node(i);
    if (n.op_type != "Mul" && n.op_type != "Div") continue;
    if (!into_scores.count(i) && !(i > s && i < sm && into_softmax.count(i))) {
      why = "attention multiplies something other than the scores";
      return std::nullopt;
    }
    const bool a_in = in_region.count(gi.producer_index(n.inputs[0])) || n.inputs[0] == qkv;
    const int other = a_in ? n.inputs[1] : n.inputs[0];
    std::optional<double> f = gi.scalar(other);
    if (!f) f = shape_derived_scalar(gi, other, head_dim);
    if (!f || *f == 0 || (n.op_type == "Div" && other != n.inputs[1])) {
      why = "attention scales the scores by a value that is neither a constant nor the head size's";
      return std::nullopt;
    }
    scale *= n.op_type == "Mul" ? *f : 1.0 / *f;
  }
  return scale;
}

bool read_layer_norm(const GraphIndex& gi, const ir::Node* n, LayerNormParams& p, std::string& why) {
  auto no = [&](const char* reason) {
    why = reason;
    return false;
  };
  if (!n || n->op_type != "LayerNormalization" || !n->domain.empty()) return no("no LayerNormalization");
  if (n->attr_i("axis", -1) != -1) return no("a LayerNormalization that is not over the last axis");
  const Tensor* s = gi.constant(n->inputs.size() > 1 ? n->inputs[1] : -1);
  const Tensor* b = gi.constant(n->inputs.size() > 2 ? n->inputs[2] : -1);
  if (!s || (n->inputs.size() > 2 && n->inputs[2] >= 0 && !b)) return no("a LayerNormalization with computed parameters");
  for (size_t k = 1; k < n->outputs.size(); ++k)
    if (n->outputs[k] >= 0) return no("a LayerNormalization whose mean or variance is used");
  p.scale = s->cast(DType::Float32);
  if (b) p.bias = b->cast(DType::Float32);
  p.epsilon = n->attr_f("epsilon", 1e-5f);
  return true;
}

namespace {

struct Walk {
  const GraphIndex& gi;
  std::vector<int>& nodes;
  std::string& why;

  bool no(const std::string& reason) {
    if (why.empty()) why = reason;
    return false;
  }
  void take(const ir::Node* n) { nodes.push_back(gi.index_of(n)); }

  // A LayerNormalization over the last axis with constant parameters.
  bool layer_norm(const ir::Node* n, LayerNormParams& p) {
    std::string reason;
    if (!read_layer_norm(gi, n, p, reason)) return no(reason);
    take(n);
    return true;
  }

  // MatMul(v, W) with W a constant [rows, cols] (cols 0: any), then an
  // optional Add of a constant [cols] bias. Returns the result value.
  int linear(const ir::Node* mm, int v, int64_t rows, int64_t cols, Tensor& w, Tensor& b) {
    if (!mm || mm->op_type != "MatMul" || mm->inputs.size() != 2 || mm->inputs[0] != v) return no("no projection MatMul"), -1;
    const Tensor* wt = projection_weight(gi, mm, v, rows, cols);
    if (!wt)
      return no("a projection whose weight is not a constant [" + std::to_string(rows) + ", " + std::to_string(cols) + "]"), -1;
    w = wt->cast(DType::Float32);
    const int out = through_bias(gi, mm, b, nodes);
    if (!b.defined()) b = Tensor::from_f32({w.dim(1)}, std::vector<float>(size_t(w.dim(1)), 0.f));
    return out;
  }

  // Follows v through Reshape / Transpose / Mul or Div by a scalar constant
  // up to the MatMul reading it. Multiplies `scale` by the scalars and
  // records the first rank-4 Reshape target.
  const ir::Node* layout_chain(int& v, double& scale, std::vector<int64_t>& split) {
    for (int steps = 0; steps < 8; ++steps) {
      const ir::Node* n = gi.only_data_reader(v);
      if (!n || !n->domain.empty()) return no("a projection read by more than one op"), nullptr;
      if (n->op_type == "MatMul") return n;
      if (n->op_type == "Reshape") {
        if (split.empty()) {
          std::vector<int64_t> t = gi.reshape_target(*n);
          if (t.size() == 4) split = t;
        }
      } else if (n->op_type == "Mul" || n->op_type == "Div") {
        std::optional<double> f = gi.scalar_factor(*n, v);
        if (!f) return no("a non-scalar scaling in attention"), nullptr;
        scale *= *f;
      } else if (n->op_type != "Transpose") {
        return no("attention layouts contain " + n->op_type), nullptr;
      }
      take(n);
      v = n->outputs[0];
    }
    return no("attention layouts are longer than any known export"), nullptr;
  }

  // Heads from a rank-4 Reshape target [batch, tokens, heads, head_dim] of width D.
  int64_t heads_of(const std::vector<int64_t>& t, int64_t d) {
    if (t.size() != 4) return 0;
    int64_t h = t[2], hd = t[3];
    if (h > 0 && hd > 0) return h * hd == d ? h : 0;
    if (h > 0 && hd == -1) return d % h == 0 ? h : 0;
    if (hd > 0 && h == -1) return d % hd == 0 ? d / hd : 0;
    return 0;
  }

  // Optional LayerScale (Mul by a constant [D]) then the residual Add of
  // `residual`. Returns the Add's output.
  int residual(int v, int residual_in, int64_t d, Tensor& layer_scale) {
    const ir::Node* n = gi.only_data_reader(v);
    if (n && n->op_type == "Mul") {
      int other = n->inputs[0] == v ? n->inputs[1] : n->inputs[0];
      const Tensor* ls = gi.constant(other);
      if (!ls || ls->numel() != d) return no("a Mul before the residual that is not a LayerScale"), -1;
      layer_scale = ls->cast(DType::Float32).reshaped({d});
      take(n);
      v = n->outputs[0];
      n = gi.only_data_reader(v);
    }
    if (!n || n->op_type != "Add" || n->inputs.size() != 2) return no("no residual Add"), -1;
    int other = n->inputs[0] == v ? n->inputs[1] : n->inputs[0];
    if (other != residual_in) return no("the residual Add does not read the layer's input"), -1;
    take(n);
    return n->outputs[0];
  }
};

}  // namespace


bool match_mlp(const GraphIndex& gi, int h, int64_t d, MlpBlock& m, std::vector<int>& nodes, std::string& why) {
  Walk w{gi, nodes, why};
  // h -> LayerNorm -> fc1 -> activation -> fc2 -> [LayerScale] -> + h
  const ir::Node* ln2 = nullptr;
  for (const ir::Node* r : gi.data_readers(h))
    if (r->op_type == "LayerNormalization") ln2 = r;
  if (!w.layer_norm(ln2, m.norm)) return false;
  const int y2 = ln2->outputs[0];
  int a = w.linear(gi.only_data_reader(y2), y2, d, 0, m.w_fc1, m.b_fc1);
  if (a < 0) return false;
  const int64_t f = m.w_fc1.dim(1);
  // fc2 is the first MatMul of a constant [F, D] downstream of the activation.
  const ir::Node* fc2 = nullptr;
  std::vector<int> frontier{a};
  std::set<int> seen;
  for (int depth = 0; depth < 12 && !fc2 && !frontier.empty(); ++depth) {
    std::vector<int> next_frontier;
    for (int v : frontier)
      for (const ir::Node* r : gi.data_readers(v)) {
        const Tensor* wt = r->op_type == "MatMul" ? gi.constant(r->inputs[1]) : nullptr;
        if (wt && wt->rank() == 2 && wt->dim(0) == f && wt->dim(1) == d) {
          fc2 = r;
        } else if (seen.insert(gi.index_of(r)).second) {
          for (int ov : r->outputs)
            if (ov >= 0) next_frontier.push_back(ov);
        }
      }
    frontier = next_frontier;
  }
  if (!fc2) return w.no("no fc2 projection back to the model width"), false;
  std::optional<Activation> act = identify_activation(gi, a, fc2->inputs[0], nodes, why);
  if (!act) return false;
  m.act = *act;
  const int projected = w.linear(fc2, fc2->inputs[0], f, d, m.w_fc2, m.b_fc2);
  if (projected < 0) return false;
  m.output = w.residual(projected, h, d, m.layer_scale);
  if (m.output < 0) return false;
  // The intermediate residual value is read by the MLP branch only.
  for (const ir::Node* r : gi.data_readers(h))
    if (r != ln2 && gi.index_of(r) != gi.producer_index(m.output))
      return w.no("the attention residual is read outside the layer"), false;
  return true;
}

namespace {

// The layer from its first LayerNorm on.
std::optional<EncoderLayer> match_from_norm(const GraphIndex& gi, int x, const ir::Node* ln1, std::string& why,
                                            int64_t given_heads) {
  EncoderLayer L;
  L.input = x;
  Walk w{gi, L.nodes, why};
  if (!w.layer_norm(ln1, L.norm1)) return std::nullopt;
  const int64_t d = L.norm1.scale.numel();
  const int y = ln1->outputs[0];
  if (gi.escapes(y)) return w.no("the normalized input is read outside the layer"), std::nullopt;
  // Q, K, V: three MatMuls of y; which is which follows from where each goes.
  auto projections = gi.data_readers(y);
  if (projections.size() == 1 && projections[0]->op_type == "MatMul") {
    const Tensor* wt = gi.constant(projections[0]->inputs[1]);
    int v = projections[0]->outputs[0];
    if (const ir::Node* add = gi.only_data_reader(v); add && add->op_type == "Add") v = add->outputs[0];
    if (wt && wt->rank() == 2 && wt->dim(0) == d && wt->dim(1) == 3 * d && splits_into_qkv(gi, v))
      return w.no("a fused QKV projection (this walk takes separate Q, K and V projections)"),
             std::nullopt;
  }
  if (projections.size() != 3) return w.no("the normalized input does not feed three projections"), std::nullopt;
  struct Proj {
    Tensor w, b;
    int value;
    const ir::Node* target;  // the MatMul it reaches
    int slot;                // which input of that MatMul
    double scale = 1;
    std::vector<int64_t> split;
  } p[3];
  for (int i = 0; i < 3; ++i) {
    int v = w.linear(projections[size_t(i)], y, d, d, p[i].w, p[i].b);
    if (v < 0) return std::nullopt;
    p[i].target = w.layout_chain(v, p[i].scale, p[i].split);
    if (!p[i].target) return std::nullopt;
    p[i].value = v;
    p[i].slot = p[i].target->inputs[0] == v ? 0 : 1;
  }
  // Q is input 0 and K input 1 of the same (score) MatMul; V is input 1 of another.
  int qi = -1, ki = -1, vi = -1;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      if (i != j && p[i].target == p[j].target && p[i].slot == 0 && p[j].slot == 1) qi = i, ki = j;
  if (qi < 0) return w.no("no score MatMul of a query and a key projection"), std::nullopt;
  vi = 3 - qi - ki;
  if (p[vi].slot != 1) return w.no("the value projection is not the right operand of the context MatMul"), std::nullopt;
  const ir::Node* scores = p[qi].target;
  w.take(scores);
  // scores -> [scalar Mul/Div] -> Softmax(last axis) -> context MatMul with V
  double score_scale = 1;
  int s = scores->outputs[0];
  const ir::Node* n = gi.only_data_reader(s);
  while (n && (n->op_type == "Mul" || n->op_type == "Div")) {
    std::optional<double> f = gi.scalar_factor(*n, s);
    if (!f) return w.no("scores are scaled by a non-constant"), std::nullopt;
    score_scale *= *f;
    w.take(n);
    s = n->outputs[0];
    n = gi.only_data_reader(s);
  }
  if (!n || n->op_type != "Softmax") return w.no("the scores do not go to a Softmax (a mask or bias is not part of this family)"), std::nullopt;
  int64_t axis = n->attr_i("axis", -1);
  if (axis != -1 && axis != 3) return w.no("Softmax is not over the keys"), std::nullopt;
  w.take(n);
  const ir::Node* context = gi.only_data_reader(n->outputs[0]);
  if (!context || context != p[vi].target || context->inputs[0] != n->outputs[0])
    return w.no("the attention weights do not multiply the value projection"), std::nullopt;
  w.take(context);
  // Heads: every projection must split the same way.
  // Heads: every projection that shows its split must show the same one;
  // when none does, the session's encoder head count gives it (the first-run
  // check of the claim catches a wrong value).
  for (int i : {qi, ki, vi}) {
    int64_t h = w.heads_of(p[i].split, d);
    if (h <= 0) continue;
    if (L.heads > 0 && h != L.heads) return w.no("query, key and value split into different head counts"), std::nullopt;
    L.heads = h;
  }
  if (L.heads <= 0) {
    const int64_t h = given_heads;
    if (h <= 0 || d % h != 0)
      return w.no("the head count cannot be read from the graph (width " + std::to_string(d) +
                  "); set KESTREL_ENCODER_HEADS=<heads> (SessionOptions::encoder_heads) to give it"),
             std::nullopt;
    L.heads = h;
  }
  L.head_dim = d / L.heads;
  L.scale = float(p[qi].scale * p[ki].scale * score_scale);
  if (p[vi].scale != 1) return w.no("the value projection is scaled"), std::nullopt;
  // context -> layouts -> output projection -> [LayerScale] -> + x
  int c = context->outputs[0];
  double unused_scale = 1;
  std::vector<int64_t> unused_split;
  const ir::Node* out_mm = w.layout_chain(c, unused_scale, unused_split);
  if (!out_mm || unused_scale != 1) return w.no("no output projection after the context"), std::nullopt;
  int o = w.linear(out_mm, c, d, d, L.w_out, L.b_out);
  if (o < 0) return std::nullopt;
  const int h = w.residual(o, x, d, L.layer_scale1);
  if (h < 0) return std::nullopt;
  MlpBlock mlp;
  if (!match_mlp(gi, h, d, mlp, L.nodes, why)) return std::nullopt;
  L.norm2 = mlp.norm;
  L.w_fc1 = mlp.w_fc1, L.b_fc1 = mlp.b_fc1, L.w_fc2 = mlp.w_fc2, L.b_fc2 = mlp.b_fc2;
  L.layer_scale2 = mlp.layer_scale;
  L.act = mlp.act;
  L.output = mlp.output;
  L.w_q = p[qi].w, L.b_q = p[qi].b;
  L.w_k = p[ki].w, L.b_k = p[ki].b;
  L.w_v = p[vi].w, L.b_v = p[vi].b;
  return L;
}

}  // namespace

std::optional<EncoderLayer> match_encoder_layer(const GraphIndex& gi, int x, std::string& why, int64_t given_heads) {
  // Several LayerNorms may read x (a tap's own norm beside the layer's):
  // the layer's is the one the walk gets through.
  why.clear();
  for (int r : gi.readers(x)) {
    const ir::Node& n = gi.node(r);
    if (n.op_type != "LayerNormalization" || n.inputs[0] != x) continue;
    std::string reason;
    if (auto layer = match_from_norm(gi, x, &n, reason, given_heads)) return layer;
    if (why.empty()) why = reason;
  }
  if (why.empty()) why = "no LayerNormalization reads the value";
  return std::nullopt;
}

}  // namespace kestrel::families

#include "families/vitdet_layer.h"

#include <algorithm>
#include <set>

namespace kestrel::families {

char relative_position_axis(const std::string& equation) {
  std::string e;
  for (char c : equation)
    if (c != ' ') e += c;
  const size_t comma = e.find(','), arrow = e.find("->");
  if (comma == std::string::npos || arrow == std::string::npos || arrow < comma) return 0;
  const std::string q = e.substr(0, comma), t = e.substr(comma + 1, arrow - comma - 1), out = e.substr(arrow + 2);
  if (q.size() != 4 || t.size() != 3 || out.size() != 4) return 0;
  const char k = t[1];
  if (std::string(q).find(k) != std::string::npos || t[2] != q[3] || out != q.substr(0, 3) + k) return 0;
  if (t[0] == q[1]) return 'h';
  if (t[0] == q[2]) return 'w';
  return 0;
}

namespace {

// True when v is computed from constants and tensor shapes only.
bool computed_from_shapes(const GraphIndex& gi, int v) {
  std::set<int> nodes = data_ancestors(gi, v, 200);
  if (nodes.empty() || nodes.size() >= 200) return false;
  for (int i : nodes) {
    const ir::Node& n = gi.node(i);
    if (GraphIndex::shape_only(n)) continue;
    for (int in : n.inputs)
      if (in >= 0 && !gi.constant(in) && !nodes.count(gi.producer_index(in))) return false;
  }
  return true;
}

// A Pad of the grid's bottom and right edges with zeros: [B, H, W, C] ->
// [B, H + ph, W + pw, C].
bool pads_bottom_right(const GraphIndex& gi, const ir::Node& pad) {
  if (pad.attr_s("mode", "constant") != "constant" || pad.inputs.size() < 2) return false;
  if (pad.inputs.size() > 2 && pad.inputs[2] >= 0) {
    std::optional<double> c = gi.scalar(pad.inputs[2]);
    if (!c || *c != 0) return false;
  }
  if (pad.inputs.size() > 3 && pad.inputs[3] >= 0) return false;  // axes
  const Tensor* p = gi.constant(pad.inputs[1]);
  // Amounts computed from shapes (the grid's size up to a multiple of the
  // window) are what the exporters write; the first-run check confirms them.
  if (!p) return computed_from_shapes(gi, pad.inputs[1]);
  if (p->numel() != 8) return false;
  std::vector<int64_t> v = p->to_i64();
  return v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 0 && v[4] == 0 && v[7] == 0 && v[5] >= 0 && v[6] >= 0;
}

// The table of one relative-position term, [2S - 1, head_dim], from the
// Einsum's second input. PyTorch's export gathers it from the constant by an
// index grid; ONNX Runtime's constant folding (its basic optimizations, run
// before a plugin EP sees the graph) leaves the gathered [S, S, head_dim]
// instead, whose entry (q, k) is row q - k + S - 1. That one is taken only
// when every entry is that row, bit for bit, so the rows read back are the
// table.
std::optional<Tensor> relative_position_table(const GraphIndex& gi, int v, int64_t head_dim) {
  const ir::Node* gather = gi.producer(v);
  if (gather && gather->op_type == "Gather" && gather->attr_i("axis", 0) == 0) {
    const Tensor* table = gi.constant(gather->inputs[0]);
    if (!table || table->rank() != 2 || table->dim(1) != head_dim || table->dim(0) % 2 == 0) return std::nullopt;
    return table->cast(DType::Float32);
  }
  const Tensor* folded = gi.constant(v);
  if (!folded || folded->rank() != 3 || folded->dim(0) != folded->dim(1) || folded->dim(2) != head_dim ||
      folded->dim(0) < 1)
    return std::nullopt;
  const Tensor f = folded->cast(DType::Float32);
  const int64_t S = f.dim(0);
  const float* t = f.data<float>();
  auto entry = [&](int64_t q, int64_t k) { return t + (q * S + k) * head_dim; };
  std::vector<float> rows(size_t((2 * S - 1) * head_dim));
  for (int64_t r = 0; r < 2 * S - 1; ++r) {  // row r = q - k + S - 1: (0, S - 1 - r) or (r - S + 1, 0)
    const float* src = r < S - 1 ? entry(0, S - 1 - r) : entry(r - S + 1, 0);
    std::copy(src, src + head_dim, rows.begin() + r * head_dim);
  }
  for (int64_t q = 0; q < S; ++q)
    for (int64_t k = 0; k < S; ++k)
      if (!std::equal(entry(q, k), entry(q, k) + head_dim, rows.begin() + (q - k + S - 1) * head_dim))
        return std::nullopt;
  return Tensor::from_f32({2 * S - 1, head_dim}, rows);
}

}  // namespace

std::optional<ViTDetLayer> match_vitdet_layer(const GraphIndex& gi, int x, std::string& why) {
  ViTDetLayer L;
  L.input = x;
  auto no = [&](const std::string& reason) {
    why = reason;
    return std::nullopt;
  };
  auto take = [&](const ir::Node* n) { L.nodes.push_back(gi.index_of(n)); };
  const ir::Node* ln1 = nullptr;
  for (const ir::Node* r : gi.data_readers(x))
    if (r->op_type == "LayerNormalization" && r->inputs[0] == x) ln1 = r;
  std::string reason;
  if (!read_layer_norm(gi, ln1, L.norm1, reason)) return no(reason);
  take(ln1);
  const int64_t d = L.norm1.scale.numel();
  const int y = ln1->outputs[0];
  if (gi.escapes(y)) return no("the normalized input is read outside the layer");

  // y [-> Pad -> Reshape to windows -> Transpose -> Reshape] -> QKV projection [D, 3D]
  int v = y;
  const ir::Node* qkv_mm = nullptr;
  bool padded = false;
  for (int steps = 0; steps < 5; ++steps) {
    const ir::Node* n = gi.only_data_reader(v);
    if (!n || !n->domain.empty()) return no("the normalized input is read by more than one op");
    if (projection_weight(gi, n, v, d, 3 * d)) {
      qkv_mm = n;
      break;
    }
    if (n->op_type == "Pad") {
      if (padded || !pads_bottom_right(gi, *n)) return no("a Pad that is not zeros after the grid's bottom and right edges");
      padded = true;
    } else if (n->op_type == "Reshape") {
      std::vector<int64_t> t = gi.reshape_target(*n);
      if (t.size() == 6) {
        if (t[2] <= 0 || t[2] != t[4] || (t[5] != d && t[5] != -1 && t[5] != GraphIndex::kUnknownDim)) return no("a window partition that is not square windows");
        L.window = t[2];
      }
    } else if (n->op_type == "Transpose") {
      if (n->attr_ints("perm") != std::vector<int64_t>{0, 1, 3, 2, 4, 5}) return no("a window partition with another transpose");
    } else {
      return no("the normalized input goes through " + n->op_type + " before the QKV projection");
    }
    take(n);
    v = n->outputs[0];
  }
  if (!qkv_mm) return no("no fused QKV projection after the LayerNorm");
  if (v != y && L.window <= 0) return no("a layout before the QKV projection that is not a window partition");
  if (padded && L.window <= 0) return no("a Pad without windows");
  L.w_qkv = gi.constant(qkv_mm->inputs[1])->cast(DType::Float32);
  const int qkv = through_bias(gi, qkv_mm, L.b_qkv, L.nodes);
  if (!L.b_qkv.defined()) L.b_qkv = Tensor::from_f32({3 * d}, std::vector<float>(size_t(3 * d), 0.f));
  if (!splits_into_qkv(gi, qkv)) return no("the QKV projection does not split into query, key and value");

  // The output projection: the nearest MatMul of a constant [D, D] downstream.
  std::set<int> downstream = data_descendants(gi, qkv, 600);
  const ir::Node* out_mm = nullptr;
  for (int i : downstream)  // index order is topological: the first is the nearest
    if (const ir::Node& n = gi.node(i); projection_weight(gi, &n, n.inputs[0], d, d)) {
      out_mm = &n;
      break;
    }
  if (!out_mm) return no("no output projection after the QKV projection");
  const std::vector<int> region = nodes_leading_to(gi, downstream, out_mm->inputs[0]);
  static const std::set<std::string> kAllowed = {"Reshape", "Transpose", "Split", "Squeeze", "Unsqueeze", "Mul", "Div",
                                                 "Add", "MatMul", "Softmax", "Einsum", "Cast", "Identity"};
  const ir::Node* softmax = nullptr;
  std::vector<const ir::Node*> matmuls, einsums;
  for (int i : region) {
    const ir::Node& n = gi.node(i);
    if (!n.domain.empty() || !kAllowed.count(n.op_type)) return no("attention contains " + n.op_type);
    if (n.op_type == "Softmax") {
      if (softmax) return no("attention has two Softmaxes");
      softmax = &n;
    }
    if (n.op_type == "MatMul") matmuls.push_back(&n);
    if (n.op_type == "Einsum") einsums.push_back(&n);
  }
  if (!softmax || matmuls.size() != 2) return no("attention is not one score product, a Softmax and one context product");
  if (einsums.size() != 2) return no("attention has no decomposed relative-position bias (two Einsums)");
  const int64_t axis = softmax->attr_i("axis", -1);
  if (axis != -1 && axis != 2) return no("Softmax is not over the keys");
  const ir::Node* scores = matmuls[0];
  const ir::Node* context = matmuls[1];
  if (context->inputs[0] != softmax->outputs[0]) return no("the attention weights do not multiply the values");
  L.heads = qkv_heads(gi, region, d);
  L.head_dim = L.heads > 0 ? d / L.heads : 0;
  if (L.heads <= 0) return no("the head count cannot be read from the QKV Reshape");

  // The bias: both Einsums read the same (unscaled) query and a table
  // gathered from a constant [2S - 1, head_dim]; the Softmax sees both.
  std::set<int> into_softmax = data_ancestors(gi, softmax->inputs[0], 4000);
  for (const ir::Node* e : einsums) {
    if (e->inputs.size() != 2 || e->inputs[0] != einsums[0]->inputs[0]) return no("the two Einsums read different queries");
    if (!into_softmax.count(gi.index_of(e))) return no("an Einsum that does not reach the Softmax");
    const char which = relative_position_axis(e->attr_s("equation", ""));
    if (!which) return no("an Einsum that is not a relative-position term ('" + e->attr_s("equation", "") + "')");
    std::optional<Tensor> table = relative_position_table(gi, e->inputs[1], L.head_dim);
    if (!table)
      return no("a relative-position Einsum whose table is neither a constant [2S - 1, head_dim] gathered by position "
                "nor one already gathered ([S, S, head_dim], entry (q, k) the row q - k + S - 1)");
    (which == 'h' ? L.rel_h : L.rel_w) = *table;
  }
  if (!L.rel_h.defined() || !L.rel_w.defined()) return no("the relative-position terms are not one per axis");
  if (L.window > 0 && (L.rel_h.dim(0) != 2 * L.window - 1 || L.rel_w.dim(0) != 2 * L.window - 1))
    return no("relative-position tables that do not span the window");

  // Scale: a constant, or computed from the head size as torch's
  // scaled_dot_product_attention writes it.
  std::optional<double> scale = attention_scale(gi, region, qkv, *scores, *softmax, L.head_dim, why);
  if (!scale) return std::nullopt;
  L.scale = float(*scale);
  L.nodes.insert(L.nodes.end(), region.begin(), region.end());

  // Output projection [-> unpartition -> crop] -> + x
  L.w_out = gi.constant(out_mm->inputs[1])->cast(DType::Float32);
  int o = through_bias(gi, out_mm, L.b_out, L.nodes);
  if (!L.b_out.defined()) L.b_out = Tensor::from_f32({d}, std::vector<float>(size_t(d), 0.f));
  const ir::Node* res1 = nullptr;
  for (int steps = 0; steps < 8 && !res1; ++steps) {
    const ir::Node* n = gi.only_data_reader(o);
    if (!n || !n->domain.empty()) return no("the attention output is read by more than one op");
    if (n->op_type == "Add") {
      res1 = n;
      break;
    }
    if (L.window <= 0) return no("a global layer rearranges its attention output (" + n->op_type + ")");
    if (n->op_type != "Reshape" && n->op_type != "Transpose" && n->op_type != "Slice")
      return no("the window unpartition contains " + n->op_type);
    take(n);
    o = n->outputs[0];
  }
  if (!res1 || (res1->inputs[0] != x && res1->inputs[1] != x)) return no("the attention output is not added to the layer input");
  take(res1);
  if (!match_mlp(gi, res1->outputs[0], d, L.mlp, L.nodes, why)) return std::nullopt;
  if (L.mlp.layer_scale.defined()) return no("a LayerScale (not part of ViT-Det)");
  L.output = L.mlp.output;
  std::sort(L.nodes.begin(), L.nodes.end());
  L.nodes.erase(std::unique(L.nodes.begin(), L.nodes.end()), L.nodes.end());
  return L;
}

}  // namespace kestrel::families

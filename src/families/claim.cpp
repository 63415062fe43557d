// The claim pass: finds chains of encoder layers, asks the families which
// one they are, and replaces each claimed chain (with the shape helpers
// that only it reads) by one fused node.
#include <algorithm>
#include <atomic>
#include <set>

#include "families/families.h"
#include "families/block.h"
#include "families/text_families.h"
#include "families/vit_families.h"
#include "families/vitdet_family.h"
#include "families/torch_layer.h"

namespace kestrel::families {

namespace {

struct Stack {
  std::vector<EncoderLayer> layers;
  int pre_norm = -1;  // index of a LayerNorm feeding the first layer, if it belongs to the encoder
};

// A LayerNormalization whose output only the first layer reads (CLIP's pre_layrnorm).
int pre_norm_of(const GraphIndex& gi, int x) {
  const ir::Node* n = gi.producer(x);
  LayerNormParams unused;
  std::string why;
  if (gi.escapes(x) || !read_layer_norm(gi, n, unused, why)) return -1;
  for (int r : gi.readers(x)) {
    const std::string& op = gi.node(r).op_type;
    if (op != "LayerNormalization" && op != "Add" && op != "Shape") return -1;
  }
  return gi.index_of(n);
}

std::atomic<int64_t> g_claim_ids{1};

// The weight or bias with each output column multiplied by scale (if any).
Tensor fold_scale(const Tensor& t, const Tensor& scale) {
  if (!scale.defined()) return t;
  std::vector<float> v = t.to_f32(), s = scale.to_f32();
  const size_t cols = s.size();
  for (size_t i = 0; i < v.size(); ++i) v[i] *= s[i % cols];
  return Tensor::from_f32(t.shape(), v);
}


// Builds the fused node and its "original" subgraph; rewrites g.
FamilyClaim rewrite(ir::Graph& g, const GraphIndex& gi, const Stack& s, const Block& block,
                    const std::vector<int>& taps, const std::string& family, const Embedding& e) {
  FamilyClaim c;
  c.family = family;
  c.layers = int64_t(s.layers.size());
  const EncoderLayer& l0 = s.layers[0];
  c.width = l0.norm1.scale.numel();
  c.heads = l0.heads;
  c.head_dim = l0.head_dim;
  c.mlp_width = l0.w_fc1.dim(1);
  c.activation = activation_name(l0.act);
  c.pre_norm = s.pre_norm >= 0;
  c.layer_scale = l0.layer_scale1.defined();
  c.class_token = e.class_token;
  c.registers = e.registers;
  c.replaced_nodes = block.nodes.size();
  const int64_t id = g_claim_ids++;
  c.node = "kestrel/" + family + "_encoder_" + std::to_string(id);

  ir::Node fused = fused_node(c.node, kEncoderOp, block.input);
  // Input 1: the mask slot; then the other values computed outside that
  // the original ops read (EncoderSpec).
  const int mask = s.layers[0].mask_input;  // the same for every layer (checked by the caller)
  fused.inputs.push_back(mask);
  for (int v : block.side_inputs)
    if (v != mask) fused.inputs.push_back(v);
  set_attr(fused, "side_inputs", int64_t(fused.inputs.size() - 1));
  auto constant = [&](const std::string& what, const Tensor& t) { return add_float_constant(g, c.node + "/" + what, t); };
  std::vector<float> eps, scales;
  if (c.pre_norm) {
    const ir::Node& ln = g.nodes[size_t(s.pre_norm)];
    fused.inputs.push_back(ln.inputs[1]);  // EncoderSpec::kPreNormScale
    fused.inputs.push_back(ln.inputs.size() > 2 ? ln.inputs[2] : -1);
    fused.attrs["pre_norm_epsilon"].kind = ir::Attribute::Kind::Float;
    fused.attrs["pre_norm_epsilon"].f = ln.attr_f("epsilon", 1e-5f);
  }
  for (size_t i = 0; i < s.layers.size(); ++i) {
    const EncoderLayer& l = s.layers[i];
    const std::string p = "layer" + std::to_string(i) + "/";
    // LayerScale folds into the projection before it: ls * (y W + b) = y (W ls) + b ls.
    Tensor w_out = fold_scale(l.w_out, l.layer_scale1), b_out = fold_scale(l.b_out, l.layer_scale1);
    Tensor w_fc2 = fold_scale(l.w_fc2, l.layer_scale2), b_fc2 = fold_scale(l.b_fc2, l.layer_scale2);
    const Tensor* slots[kSlotsPerLayer] = {&l.norm1.scale, &l.norm1.bias, &l.w_q,    &l.w_k,         &l.w_v,
                                           &l.b_q,         &l.b_k,         &l.b_v,    &w_out,         &b_out,
                                           &l.norm2.scale, &l.norm2.bias, &l.w_fc1, &l.b_fc1,       &w_fc2,
                                           &b_fc2};
    static const char* kNames[kSlotsPerLayer] = {"norm1_scale", "norm1_bias", "q_weight",  "k_weight",
                                                 "v_weight",    "q_bias",     "k_bias",    "v_bias",
                                                 "out_weight",  "out_bias",   "norm2_scale", "norm2_bias",
                                                 "fc1_weight",  "fc1_bias",   "fc2_weight", "fc2_bias"};
    for (int k = 0; k < kSlotsPerLayer; ++k) fused.inputs.push_back(constant(p + kNames[k], *slots[k]));
    eps.push_back(l.norm1.epsilon);
    eps.push_back(l.norm2.epsilon);
    scales.push_back(l.scale);
  }
  set_encoder_attrs(fused, c, id, l0.act, eps, scales);
  set_attr(fused, "pre_norm", int64_t(c.pre_norm));
  c.taps.assign(taps.begin(), taps.end());
  replace_block(g, gi, block, taps, fused);
  return c;
}

// torch's nn.TransformerEncoderLayer(norm_first=True) stacks (torch_layer.h),
// family "torch_transformer"; at most one per call.
bool claim_torch_stack(ir::Graph& g, ClaimReport& report) {
  GraphIndex gi(g);
  for (const ir::Node* norm : first_norm_of_each_input(g)) {
    const ir::Node& n = *norm;
    const int x = n.inputs[0];
    std::string why;
    Stack s;
    s.layers = chain_layers(gi, x, match_torch_layer, why);
    if (s.layers.empty()) continue;  // the other walks report what they saw
    const int mask = s.layers[0].mask_input;
    bool alike = true;
    for (const EncoderLayer& l : s.layers)
      alike = alike && l.mask_input == mask && l.heads == s.layers[0].heads && l.act == s.layers[0].act;
    if (!alike) {
      report.note(n.name, "its torch encoder layers differ in mask, heads or activation");
      continue;
    }
    Block block;
    std::vector<int> taps;
    std::string unsealed;
    if (!assemble_chain(gi, s.layers, {}, x, block, taps, unsealed)) {
      report.note(n.name, unsealed);
      continue;
    }
    // The original ops read the mask first, then the other side inputs (as the fused node does).
    block.side_inputs.erase(std::remove(block.side_inputs.begin(), block.side_inputs.end(), mask), block.side_inputs.end());
    if (mask >= 0) block.side_inputs.insert(block.side_inputs.begin(), mask);
    report.claims.push_back(rewrite(g, gi, s, block, taps, "torch_transformer", Embedding{}));
    return true;
  }
  return false;
}

}  // namespace

ClaimReport claim_families(ir::Graph& g, const ClaimOptions& opts) {
  ClaimReport report;
  if (!opts.enabled) return report;
  auto match = [&](const GraphIndex& index, int x, std::string& why) {
    return match_encoder_layer(index, x, why, opts.encoder_heads);
  };
  for (bool again = true; again;) {  // one claim per pass over a fresh index
    again = false;
    GraphIndex gi(g);
    for (const ir::Node* norm : first_norm_of_each_input(g)) {
      if (again) break;
      const ir::Node& n = *norm;
      const int x = n.inputs[0];
      std::string why;
      Stack s;
      s.layers = chain_layers(gi, x, match, why);
      if (s.layers.empty()) {
        // Worth reporting only where attention starts: the norm feeds projections.
        int projections = 0;
        for (int r : gi.readers(n.outputs[0])) projections += gi.node(r).op_type == "MatMul";
        if (!why.empty() && (projections >= 3 || why.find("fused QKV") != std::string::npos))
          report.note(n.name, why);
        continue;
      }
      s.pre_norm = pre_norm_of(gi, x);
      const int input = s.pre_norm >= 0 ? gi.node(s.pre_norm).inputs[0] : x;
      std::set<int> extra;
      if (s.pre_norm >= 0) extra.insert(s.pre_norm);
      Block block;
      std::vector<int> taps;
      std::string unsealed;
      if (!assemble_chain(gi, s.layers, extra, input, block, taps, unsealed) || !block.side_inputs.empty()) {
        report.note(n.name, (unsealed.empty() ? "the encoder reads graph inputs" : unsealed));
        continue;
      }
      Embedding e = describe_embedding(gi, input);
      std::string refusals;
      std::optional<std::string> family =
          classify_vit(StackTraits{&s.layers, s.pre_norm >= 0, taps.size(), e}, refusals);
      if (!family) {
        report.note(n.name, std::to_string(s.layers.size()) + " encoder layers matched no family (" +
                                   refusals + ")");
        continue;
      }
      report.claims.push_back(rewrite(g, gi, s, block, taps, *family, e));
      again = true;
    }
  }
  while (claim_text_stack(g, report, g_claim_ids, opts)) {
  }
  while (claim_torch_stack(g, report)) {
  }
  while (claim_vitdet_stack(g, report, g_claim_ids)) {
  }
  // A later claim may have taken nodes an earlier note was about.
  std::set<std::string> present;
  for (const ir::Node& n : g.nodes) present.insert(n.name);
  std::vector<Unclaimed> still;
  for (const Unclaimed& u : report.unclaimed)
    if (present.count(u.node)) still.push_back(u);
  report.unclaimed = std::move(still);
  ir::topo_sort(g);
  return report;
}

}  // namespace kestrel::families

// The rotary text family (ModernBERT): chains of RoPE layers (rope_layer.h)
// after a token-embedding Gather and its LayerNorm, claimed as one
// com.kestrel RopeEncoder node.
#include <algorithm>
#include <atomic>
#include <set>

#include "families/block.h"
#include "families/text_families.h"
#include "families/rope_layer.h"
#include "families/rope_spec.h"

namespace kestrel::families {
namespace {

// The embedding before the encoder: LayerNorm(Gather(table, ids)).
bool token_embedding_before(const GraphIndex& gi, int x) {
  const ir::Node* ln = gi.producer(x);
  if (!ln || ln->op_type != "LayerNormalization") return false;
  const ir::Node* g = gi.producer(ln->inputs[0]);
  if (!g || g->op_type != "Gather") return false;
  const Tensor* table = gi.constant(g->inputs[0]);
  return table && table->rank() == 2;
}


}  // namespace

// Claims at most one stack per call (the caller repeats on a fresh index).
bool claim_text_stack(ir::Graph& g, ClaimReport& report, std::atomic<int64_t>& ids, const ClaimOptions& opts) {
  GraphIndex gi(g);
  std::set<int> tried;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (n.op_type != "MatMul" || n.inputs.size() != 2) continue;
    const Tensor* w = gi.constant(n.inputs[1]);
    if (!w || w->rank() != 2 || w->dim(1) != 3 * w->dim(0)) continue;
    // The layer input: the MatMul's input, or the input of the norm before it.
    int x = n.inputs[0];
    if (const ir::Node* p = gi.producer(x); p && p->op_type == "LayerNormalization" && !token_embedding_before(gi, x))
      x = p->inputs[0];
    if (!tried.insert(x).second) continue;
    std::string why;
    std::vector<RopeLayer> layers = chain_layers(gi, x, match_rope_layer, why);
    if (layers.empty()) {
      if (!why.empty()) report.note(n.name, why);
      continue;
    }
    if (!token_embedding_before(gi, x)) {
      report.note(n.name, std::to_string(layers.size()) +
                       " rotary layers matched no family (modernbert: no token embedding and its LayerNorm before them)");
      continue;
    }
    Block block;
    std::vector<int> taps;
    std::string unsealed;
    if (!assemble_chain(gi, layers, {}, x, block, taps, unsealed)) {
      report.note(n.name, unsealed);
      continue;
    }
    const int mask = layers[0].mask_input;
    bool alike = true;
    for (const RopeLayer& l : layers)
      alike = alike && l.mask_input == mask && l.heads == layers[0].heads && l.act == layers[0].act &&
              l.inv_freq.size() == layers[0].inv_freq.size();
    if (!alike) {
      report.note(n.name, "its layers differ in mask, heads, activation or rotary size");
      continue;
    }
    // The fused node.
    FamilyClaim c;
    c.family = "modernbert";
    c.layers = int64_t(layers.size());
    c.width = layers[0].w_qkv.dim(0);
    c.heads = layers[0].heads;
    c.head_dim = layers[0].head_dim;
    c.mlp_width = layers[0].w_fc2.dim(0);
    c.activation = std::string(activation_name(layers[0].act)) + " (gated)";
    c.replaced_nodes = block.nodes.size();
    const int64_t id = ids++;
    c.node = "kestrel/modernbert_encoder_" + std::to_string(id);
    for (const RopeLayer& l : layers) {
      c.windows.push_back(l.window);
      c.attention.push_back(l.window < 0 ? "global" : "sliding +-" + std::to_string(l.window));
    }
    ir::Node fused = fused_node(c.node, kRopeEncoderOp, x);
    // Input 1 is always the padding mask (absent: -1), which the kernels read
    // themselves, even where the graph built its masks from it outside the
    // block; the other side inputs follow.
    block.side_inputs.erase(std::remove(block.side_inputs.begin(), block.side_inputs.end(), mask), block.side_inputs.end());
    if (mask >= 0) block.side_inputs.insert(block.side_inputs.begin(), mask);
    if (mask < 0) fused.inputs.push_back(-1);
    fused.inputs.insert(fused.inputs.end(), block.side_inputs.begin(), block.side_inputs.end());
    const int64_t side = int64_t(block.side_inputs.size()) + (mask < 0 ? 1 : 0);
    std::vector<float> eps, scales, masked, inv_freq;
    std::vector<int64_t> windows;
    for (size_t li = 0; li < layers.size(); ++li) {
      const RopeLayer& l = layers[li];
      const std::string p = c.node + "/layer" + std::to_string(li) + "/";
      const Tensor w[3] = {qkv_part(l.w_qkv, 0), qkv_part(l.w_qkv, 1), qkv_part(l.w_qkv, 2)};
      const Tensor b[3] = {qkv_part(l.b_qkv, 0), qkv_part(l.b_qkv, 1), qkv_part(l.b_qkv, 2)};
      const Tensor* slots[kSlotsPerLayer] = {&l.norm1.scale, &l.norm1.bias, &w[0],   &w[1],   &w[2],
                                             &b[0],          &b[1],         &b[2],   &l.w_out, &l.b_out,
                                             &l.norm2.scale, &l.norm2.bias, &l.w_fc1, &l.b_fc1, &l.w_fc2,
                                             &l.b_fc2};
      for (int k = 0; k < kSlotsPerLayer; ++k) fused.inputs.push_back(add_float_constant(g, p + std::to_string(k), *slots[k]));
      eps.push_back(l.norm1.epsilon);
      eps.push_back(l.norm2.epsilon);
      scales.push_back(l.scale);
      masked.push_back(l.masked_score);
      windows.push_back(l.window);
      inv_freq.insert(inv_freq.end(), l.inv_freq.begin(), l.inv_freq.end());
    }
    set_encoder_attrs(fused, c, id, layers[0].act, eps, scales);
    set_attr(fused, "side_inputs", side);
    set_attr(fused, "masked_scores", masked);
    set_attr(fused, "inv_freq", inv_freq);
    set_attr(fused, "windows", windows);
    if (opts.padding_free && mask >= 0) set_attr(fused, "padding_free", int64_t(1));
    c.taps.assign(taps.begin(), taps.end());
    replace_block(g, gi, block, taps, fused);
    report.claims.push_back(c);
    return true;
  }
  return false;
}

}  // namespace kestrel::families

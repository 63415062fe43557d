#include "families/vitdet_family.h"

#include <set>

#include "families/block.h"
#include "families/vit_families.h"
#include "families/vitdet_layer.h"
#include "families/vitdet_spec.h"

namespace kestrel::families {
namespace {

// SAM's neck after the encoder, for the report: through Transposes, a 1x1
// Conv, a LayerNorm, a 3x3 Conv and a LayerNorm. It runs op by op.
std::string describe_neck(const GraphIndex& gi, int v) {
  std::vector<std::string> ops;
  for (int steps = 0; steps < 10; ++steps) {
    const ir::Node* n = gi.only_data_reader(v);
    if (!n || !n->domain.empty() || n->outputs.empty()) break;
    if (n->op_type == "Conv") {
      const Tensor* w = gi.constant(n->inputs.size() > 1 ? n->inputs[1] : -1);
      if (!w || w->rank() != 4) break;
      ops.push_back(std::to_string(w->dim(2)) + "x" + std::to_string(w->dim(3)) + " Conv");
    } else if (n->op_type == "LayerNormalization") {
      ops.push_back("LayerNorm");
    } else if (n->op_type != "Transpose") {
      break;
    }
    v = n->outputs[0];
  }
  if (ops != std::vector<std::string>{"1x1 Conv", "LayerNorm", "3x3 Conv", "LayerNorm"}) return "";
  return "SAM's neck (1x1 Conv, LayerNorm, 3x3 Conv, LayerNorm), op by op";
}

}  // namespace

bool claim_vitdet_stack(ir::Graph& g, ClaimReport& report, std::atomic<int64_t>& ids) {
  GraphIndex gi(g);
  for (const ir::Node* norm : first_norm_of_each_input(g)) {
    const ir::Node& n = *norm;
    const int x = n.inputs[0];
    std::string why;
    std::vector<ViTDetLayer> layers = chain_layers(gi, x, match_vitdet_layer, why);
    if (layers.empty()) {
      // Worth reporting only once the walk saw relative-position terms.
      if (why.find("relative-position") != std::string::npos) report.note(n.name, why);
      continue;
    }
    const Embedding e = describe_embedding(gi, x);
    if (!e.patch_conv) {
      report.note(n.name, std::to_string(layers.size()) +
                  " windowed-attention layers matched no family (sam: no patch-embedding Conv before them)");
      continue;
    }
    Block block;
    std::vector<int> taps;
    std::string unsealed;
    if (!assemble_chain(gi, layers, {}, x, block, taps, unsealed) || !block.side_inputs.empty()) {
      report.note(n.name, (unsealed.empty() ? "the encoder reads values computed outside it" : unsealed));
      continue;
    }
    bool alike = true;
    for (const ViTDetLayer& l : layers)
      alike = alike && l.heads == layers[0].heads && l.mlp.act == layers[0].mlp.act;
    if (!alike) {
      report.note(n.name, "its layers differ in heads or activation");
      continue;
    }
    FamilyClaim c;
    c.family = "sam";
    c.layers = int64_t(layers.size());
    c.width = layers[0].w_qkv.dim(0);
    c.heads = layers[0].heads;
    c.head_dim = layers[0].head_dim;
    c.mlp_width = layers[0].mlp.w_fc1.dim(1);
    c.activation = activation_name(layers[0].mlp.act);
    c.replaced_nodes = block.nodes.size();
    c.after = describe_neck(gi, layers.back().output);
    const int64_t id = ids++;
    c.node = "kestrel/sam_encoder_" + std::to_string(id);
    ir::Node fused = fused_node(c.node, kViTDetEncoderOp, x);
    std::vector<float> eps, scales;
    std::vector<int64_t> windows;
    for (size_t li = 0; li < layers.size(); ++li) {
      const ViTDetLayer& l = layers[li];
      c.attention.push_back(l.window > 0 ? "windows of " + std::to_string(l.window) : "global");
      const std::string p = c.node + "/layer" + std::to_string(li) + "/";
      const Tensor w[3] = {qkv_part(l.w_qkv, 0), qkv_part(l.w_qkv, 1), qkv_part(l.w_qkv, 2)};
      const Tensor b[3] = {qkv_part(l.b_qkv, 0), qkv_part(l.b_qkv, 1), qkv_part(l.b_qkv, 2)};
      const Tensor* slots[kViTDetSlotsPerLayer] = {
          &l.norm1.scale, &l.norm1.bias,   &w[0],           &w[1],           &w[2],       &b[0],
          &b[1],          &b[2],           &l.w_out,        &l.b_out,        &l.mlp.norm.scale, &l.mlp.norm.bias,
          &l.mlp.w_fc1,   &l.mlp.b_fc1,    &l.mlp.w_fc2,    &l.mlp.b_fc2,    &l.rel_h,    &l.rel_w};
      for (int k = 0; k < kViTDetSlotsPerLayer; ++k)
        fused.inputs.push_back(add_float_constant(g, p + std::to_string(k), *slots[k]));
      eps.push_back(l.norm1.epsilon);
      eps.push_back(l.mlp.norm.epsilon);
      scales.push_back(l.scale);
      windows.push_back(l.window);
    }
    set_encoder_attrs(fused, c, id, layers[0].mlp.act, eps, scales);
    set_attr(fused, "windows", windows);
    c.taps.assign(taps.begin(), taps.end());
    replace_block(g, gi, block, taps, fused);
    report.claims.push_back(c);
    return true;
  }
  return false;
}

}  // namespace kestrel::families

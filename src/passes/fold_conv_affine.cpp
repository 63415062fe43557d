// Folds the per-channel Mul and Add constants that follow a Conv into its
// weights and bias, as ONNX Runtime's ConvMulFusion and ConvAddFusion do:
//   Conv(x, W, B) -> Mul(s) -> Add(t)   becomes   Conv(x, W * s, B * s + t),
// any run of such Muls and Adds, each reading the one before alone (PP-OCR's
// PP-LCNet writes a learnable scale and bias after every convolution as
// these two nodes, which then stand between the Conv and its activation).
// Float32 arithmetic, as ONNX Runtime folds. Only where W (and B) are float32
// initializers and the Conv carries no fused activation yet.
#include <map>
#include <optional>

#include "ops/epilogue.h"
#include "passes/channel_constant.h"
#include "passes/graph_uses.h"
#include "passes/passes.h"

namespace kestrel::passes {

int fold_conv_affine(ir::Graph& g) {
  GraphUses uses(g);
  std::map<int, size_t> reader;  // value -> the node reading it (meaningful where it has one reader)
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs)
      if (v >= 0) reader[v] = i;
  std::vector<bool> removed(g.nodes.size(), false);
  int folded = 0;
  for (ir::Node& conv : g.nodes) {
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1 || conv.inputs.size() < 2 ||
        conv.has(ops::kEpilogueAttr))
      continue;
    const Tensor* w = float_init(g, conv.inputs[1]);
    const bool has_b = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
    const Tensor* b = has_b ? float_init(g, conv.inputs[2]) : nullptr;
    if (!w || w->rank() < 3 || (has_b && (!b || b->numel() != w->dim(0)))) continue;
    const int64_t M = w->dim(0), inner = w->numel() / M;
    std::optional<Tensor> nw;
    std::vector<float> bias = b ? b->to_f32() : std::vector<float>(size_t(M), 0.0f);
    bool bias_changed = false;
    int y = conv.outputs[0];
    while (uses.private_to_one_reader(y)) {
      const size_t r = reader.at(y);
      const ir::Node& next = g.nodes[r];
      if (removed[r]) break;
      if (auto s = channel_constant(g, next, "Mul", y, M, w->rank())) {
        if (!nw) nw = w->clone();
        float* wd = nw->data<float>();
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t e = 0; e < inner; ++e) wd[m * inner + e] *= (*s)[size_t(m)];
          bias[size_t(m)] *= (*s)[size_t(m)];
        }
      } else if (auto t = channel_constant(g, next, "Add", y, M, w->rank())) {
        for (int64_t m = 0; m < M; ++m) bias[size_t(m)] += (*t)[size_t(m)];
      } else {
        break;
      }
      bias_changed = true;
      removed[r] = true;
      y = next.outputs[0];
    }
    if (!bias_changed) continue;
    // Fresh initializers: the originals may be shared with other nodes.
    if (nw) {
      const int wv = g.add_value(conv.name + "/affine_folded_weight");
      g.values[size_t(wv)].dtype = DType::Float32;
      g.initializers[wv] = std::move(*nw);
      conv.inputs[1] = wv;
    }
    const int bv = g.add_value(conv.name + "/affine_folded_bias");
    g.values[size_t(bv)].dtype = DType::Float32;
    g.initializers[bv] = Tensor::from_f32({M}, bias);
    if (conv.inputs.size() < 3) conv.inputs.resize(3, -1);
    conv.inputs[2] = bv;
    conv.outputs[0] = y;
    ++folded;
  }
  erase_nodes(g, removed);
  return folded;
}

}  // namespace kestrel::passes

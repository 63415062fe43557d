// Folds an inference BatchNormalization into the Conv or ConvTranspose that
// feeds it (optionally through an Add of a per-channel constant, as
// exporters write a ConvTranspose bias): W' = W * k, b' = (b - mean) * k + beta,
// k = scale / sqrt(var + eps), computed in double. One pass over memory less,
// and no large pre-normalization values, which float16 storage could not hold.
// Only when every parameter is a float32 initializer and nothing else reads
// the intermediate values.
#include <cmath>
#include <optional>

#include "passes/channel_constant.h"
#include "passes/graph_uses.h"
#include "passes/passes.h"

namespace kestrel::passes {

int fold_batchnorm(ir::Graph& g) {
  GraphUses uses(g);
  std::vector<bool> removed(g.nodes.size(), false);
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& bn = g.nodes[i];
    if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || bn.inputs.size() != 5 || bn.outputs.empty()) continue;
    if (bn.attr_i("training_mode", 0) || (bn.opset < 9 && bn.attr_i("spatial", 1) == 0)) continue;
    bool extra_outputs = false;
    for (size_t k = 1; k < bn.outputs.size(); ++k) extra_outputs |= bn.outputs[k] >= 0;
    if (extra_outputs) continue;
    const Tensor* p[4];
    bool ok = true;
    for (int k = 0; k < 4; ++k) ok &= (p[k] = float_init(g, bn.inputs[size_t(k + 1)])) != nullptr;
    if (!ok) continue;
    // Walk up: BN <- [Add of a channel constant] <- Conv/ConvTranspose.
    int x = bn.inputs[0];
    int pi = uses.producer(x);
    if (pi < 0 || removed[size_t(pi)] || !uses.private_to_one_reader(x)) continue;
    int add_index = -1;
    if (g.nodes[size_t(pi)].op_type == "Add") {
      add_index = pi;
      const ir::Node& add = g.nodes[size_t(pi)];
      int a = add.inputs.size() == 2 ? add.inputs[0] : -1, b = add.inputs.size() == 2 ? add.inputs[1] : -1;
      int inner = float_init(g, b) ? a : b;
      if (inner < 0 || !uses.private_to_one_reader(inner)) continue;
      pi = uses.producer(inner);
      if (pi < 0 || removed[size_t(pi)]) continue;
    }
    ir::Node& conv = g.nodes[size_t(pi)];
    bool transpose = conv.op_type == "ConvTranspose";
    if ((conv.op_type != "Conv" && !transpose) || !conv.domain.empty() || conv.outputs.size() != 1) continue;
    if (conv.inputs.size() < 2) continue;
    const Tensor* w = float_init(g, conv.inputs[1]);
    const Tensor* b = conv.inputs.size() > 2 && conv.inputs[2] >= 0 ? float_init(g, conv.inputs[2]) : nullptr;
    if (!w || w->rank() < 3 || (conv.inputs.size() > 2 && conv.inputs[2] >= 0 && !b)) continue;
    const int64_t group = conv.attr_i("group", 1);
    if (group < 1) continue;
    // Output channels: W is [M, C/g, k...] for Conv, [C, M/g, k...] for ConvTranspose.
    const int64_t M = transpose ? w->dim(1) * group : w->dim(0);
    if (p[0]->numel() != M || p[1]->numel() != M || p[2]->numel() != M || p[3]->numel() != M) continue;
    std::vector<float> added(size_t(M), 0.0f);
    if (add_index >= 0) {
      auto c = channel_constant(g, g.nodes[size_t(add_index)], "Add", g.nodes[size_t(pi)].outputs[0], M, w->rank());
      if (!c) continue;
      added = *c;
    }
    const double eps = bn.attr_f("epsilon", 1e-5f);
    std::vector<float> sc = p[0]->to_f32(), beta = p[1]->to_f32(), mean = p[2]->to_f32(), var = p[3]->to_f32();
    std::vector<float> bias = b ? b->to_f32() : std::vector<float>(size_t(M), 0.0f);
    std::vector<double> k(static_cast<size_t>(M));
    for (int64_t m = 0; m < M; ++m) k[size_t(m)] = double(sc[size_t(m)]) / std::sqrt(double(var[size_t(m)]) + eps);
    Tensor nw = w->clone();
    float* wd = nw.data<float>();
    const int64_t inner = nw.numel() / (w->dim(0) * w->dim(1));
    for (int64_t a = 0; a < w->dim(0); ++a)
      for (int64_t c = 0; c < w->dim(1); ++c) {
        int64_t m = transpose ? (a / (w->dim(0) / group)) * w->dim(1) + c : a;
        float* row = wd + (a * w->dim(1) + c) * inner;
        for (int64_t e = 0; e < inner; ++e) row[e] = float(double(row[e]) * k[size_t(m)]);
      }
    Tensor nb(DType::Float32, {M});
    for (int64_t m = 0; m < M; ++m)
      nb.data<float>()[m] = float((double(bias[size_t(m)]) + added[size_t(m)] - mean[size_t(m)]) * k[size_t(m)] +
                                  beta[size_t(m)]);
    // Fresh initializer names: the originals may be shared with other nodes.
    int wv = g.add_value(conv.name + "/bn_folded_weight");
    int bv = g.add_value(conv.name + "/bn_folded_bias");
    g.values[size_t(wv)].dtype = g.values[size_t(bv)].dtype = DType::Float32;
    g.initializers[wv] = nw;
    g.initializers[bv] = nb;
    conv.inputs[1] = wv;
    if (conv.inputs.size() < 3) conv.inputs.resize(3, -1);
    conv.inputs[2] = bv;
    conv.outputs[0] = bn.outputs[0];
    removed[i] = true;
    if (add_index >= 0) removed[size_t(add_index)] = true;
    ++folded;
  }
  erase_nodes(g, removed);
  return folded;
}

}  // namespace kestrel::passes

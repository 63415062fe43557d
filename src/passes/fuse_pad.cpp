// Folds a zero Pad of the spatial dims into the Conv that reads it (as ONNX
// Runtime does): the Conv's own zero padding gives the same result without
// writing and re-reading a padded copy of the activation.
#include "passes/graph_uses.h"
#include "passes/passes.h"

namespace kestrel::passes {
namespace {

// The Pad's per-axis begin/end amounts when it is a constant-mode zero pad
// whose amounts are known at load time and non-negative; empty otherwise.
std::vector<int64_t> zero_pad_amounts(const ir::Graph& g, const ir::Node& pad, int rank) {
  if (pad.attr_s("mode", "constant") != "constant") return {};
  std::vector<int64_t> pads;
  if (pad.opset < 11) {
    pads = pad.attr_ints("pads");
    if (pad.attr_f("value", 0.f) != 0.f) return {};
  } else {
    auto constant = [&](size_t i) -> const Tensor* {
      if (i >= pad.inputs.size() || pad.inputs[i] < 0) return nullptr;
      auto it = g.initializers.find(pad.inputs[i]);
      return it == g.initializers.end() ? nullptr : &it->second;
    };
    const Tensor* p = constant(1);
    if (!p || p->dtype() != DType::Int64) return {};
    if (pad.inputs.size() > 2 && pad.inputs[2] >= 0) {
      const Tensor* v = constant(2);
      if (!v || v->numel() > 1 || (v->numel() == 1 && v->to_f32()[0] != 0.f)) return {};
    }
    if (pad.inputs.size() > 3 && pad.inputs[3] >= 0) return {};  // axes (opset 18): rare, not folded
    pads = p->to_i64();
  }
  if (int(pads.size()) != 2 * rank) return {};
  for (int64_t v : pads)
    if (v < 0) return {};
  return pads;
}

}  // namespace

int fuse_pads(ir::Graph& g) {
  GraphUses uses(g);
  std::vector<bool> removed(g.nodes.size(), false);
  int fused = 0;
  for (ir::Node& conv : g.nodes) {
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2 || conv.inputs[0] < 0) continue;
    if (conv.attr_s("auto_pad", "NOTSET") != "NOTSET") continue;
    int x = conv.inputs[0];
    int p = uses.producer(x);
    if (p < 0 || removed[size_t(p)]) continue;
    const ir::Node& pad = g.nodes[size_t(p)];
    if (pad.op_type != "Pad" || !pad.domain.empty() || pad.inputs.empty() || pad.inputs[0] < 0) continue;
    if (!uses.private_to_one_reader(x)) continue;
    // The rank comes from the weight, which is always an initializer here.
    auto w = g.initializers.find(conv.inputs[1]);
    if (w == g.initializers.end()) continue;
    int rank = w->second.rank(), spatial = rank - 2;
    std::vector<int64_t> pads = zero_pad_amounts(g, pad, rank);
    if (pads.empty() || pads[0] || pads[1] || pads[size_t(rank)] || pads[size_t(rank) + 1]) continue;  // N, C untouched
    std::vector<int64_t> conv_pads = conv.attr_ints("pads", std::vector<int64_t>(size_t(2 * spatial), 0));
    if (int(conv_pads.size()) != 2 * spatial) continue;
    for (int d = 0; d < spatial; ++d) {
      conv_pads[size_t(d)] += pads[size_t(2 + d)];                       // begin of spatial dim d
      conv_pads[size_t(spatial + d)] += pads[size_t(rank + 2 + d)];      // end of spatial dim d
    }
    ir::set_attr(conv, "pads", conv_pads);
    conv.inputs[0] = pad.inputs[0];
    removed[size_t(p)] = true;
    ++fused;
  }
  erase_nodes(g, removed);
  return fused;
}

}  // namespace kestrel::passes

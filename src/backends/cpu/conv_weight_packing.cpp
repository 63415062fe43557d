#include "backends/cpu/conv_weight_packing.h"

#include <map>

#include "backends/cpu/direct_conv.h"

namespace kestrel::backends::cpu {

int pack_conv_weights(ir::Graph& g) {
  int packed = 0;
  std::map<std::pair<int, int64_t>, int> made;  // (weights, groups) -> their packed value
  for (ir::Node& n : g.nodes) {
    if (n.op_type != "Conv" || !n.domain.empty() || n.inputs.size() < 2 || n.inputs.size() > 4 ||
        n.has(kPackedWeightsAttr))
      continue;
    const int wv = n.inputs[1];
    const auto it = wv >= 0 ? g.initializers.find(wv) : g.initializers.end();
    if (it == g.initializers.end()) continue;
    const Tensor& w = it->second;
    const int64_t group = n.attr_i("group", 1);
    if (w.dtype() != DType::Float32 || (w.rank() != 3 && w.rank() != 4) || group < 1 || w.dim(0) % group != 0)
      continue;
    const int64_t window = w.rank() == 4 ? w.dim(2) * w.dim(3) : w.dim(2);
    if (window == 1 || (w.dim(1) == 1 && group > 1)) continue;  // 1x1 and depthwise: never direct
    const auto key = std::make_pair(wv, group);
    auto m = made.find(key);
    if (m == made.end()) {
      std::vector<float> p = pack_direct_conv_weights(w.data<float>(), w.dim(0), group, w.dim(1) * window);
      const int pv = g.add_value(g.values[size_t(wv)].name + "/kestrel_packed");
      g.values[size_t(pv)].dtype = DType::Float32;
      g.initializers[pv] = Tensor::from_f32({int64_t(p.size())}, p);
      m = made.emplace(key, pv).first;
    }
    n.inputs.resize(4, -1);
    n.inputs.push_back(m->second);
    ir::Attribute at;
    at.kind = ir::Attribute::Kind::Int;
    at.i = 4;
    n.attrs[kPackedWeightsAttr] = at;
    ++packed;
  }
  return packed;
}

}  // namespace kestrel::backends::cpu

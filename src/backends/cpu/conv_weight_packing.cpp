#include "backends/cpu/conv_weight_packing.h"

#include <map>

#include "backends/cpu/direct_conv.h"
#include "backends/cpu/qconv_weights.h"
#include "core/cpu_isa.h"

namespace kestrel::backends::cpu {

namespace {

// QLinearConv's and ConvInteger's weights (input w, zero point wz) for their
// packed product, appended as two inputs after the op's last one (`slots`):
// rows then row sums (qconv_weights.h). Only where that product runs
// (qconv_packed_product(): every level's kernel reads the same packing), on
// weights and zero point initializers, not a depthwise layer of up to 256
// taps (those run in float).
bool pack_qconv(ir::Graph& g, ir::Node& n, int w_at, int wz_at, size_t slots) {
  if (!qconv_packed_product() || n.has(kPackedWeightsAttr) || int(n.inputs.size()) <= w_at || n.inputs.size() > slots)
    return false;
  const auto wit = n.inputs[size_t(w_at)] >= 0 ? g.initializers.find(n.inputs[size_t(w_at)]) : g.initializers.end();
  if (wit == g.initializers.end()) return false;
  const Tensor& w = wit->second;
  if ((w.dtype() != DType::Int8 && w.dtype() != DType::UInt8) || w.rank() != 4) return false;
  const int64_t group = n.attr_i("group", 1), M = w.dim(0), Cg = w.dim(1), taps = w.dim(2) * w.dim(3);
  if (group < 1 || M % group != 0 || qconv_depthwise_in_float(Cg, M / group, taps)) return false;
  std::vector<int32_t> wz(size_t(M), 0);
  const int wzv = int(n.inputs.size()) > wz_at ? n.inputs[size_t(wz_at)] : -1;
  if (wzv >= 0) {
    const auto zit = g.initializers.find(wzv);
    if (zit == g.initializers.end() || zit->second.dtype() != w.dtype() ||
        (zit->second.numel() != 1 && zit->second.numel() != M))
      return false;
    const std::vector<int64_t> z = zit->second.to_i64();
    for (int64_t m = 0; m < M; ++m) wz[size_t(m)] = int32_t(z[z.size() == 1 ? 0 : size_t(m)]);
  }
  const std::vector<int64_t> wv = w.to_i64();
  const QConvWeights p =
      pack_qconv_weights(std::vector<int32_t>(wv.begin(), wv.end()), wz, M, group, Cg, taps, w.dtype() == DType::UInt8 ? 128 : 0);
  const std::string base = g.values[size_t(n.inputs[size_t(w_at)])].name;
  Tensor rows(DType::Int8, {int64_t(p.rows.size())});
  std::copy(p.rows.begin(), p.rows.end(), rows.data<int8_t>());
  Tensor sums(DType::Int32, {int64_t(p.row_sums.size())});
  std::copy(p.row_sums.begin(), p.row_sums.end(), sums.data<int32_t>());
  hand_packed_inputs(g, n, slots, {{base + "/kestrel_packed_rows", std::move(rows)},
                                   {base + "/kestrel_packed_sums", std::move(sums)}});
  return true;
}

}  // namespace

void hand_packed_inputs(ir::Graph& g, ir::Node& n, size_t slots, std::vector<std::pair<std::string, Tensor>> packed) {
  n.inputs.resize(slots, -1);
  for (auto& [name, t] : packed) {
    const int v = g.add_value(name);
    g.values[size_t(v)].dtype = t.dtype();
    g.initializers[v] = std::move(t);
    n.inputs.push_back(v);
  }
  ir::Attribute at;
  at.kind = ir::Attribute::Kind::Int;
  at.i = int64_t(slots);
  n.attrs[kPackedWeightsAttr] = at;
}

int pack_conv_weights(ir::Graph& g) {
  int packed = 0;
  for (ir::Node& n : g.nodes) {
    if (!n.domain.empty()) continue;
    if (n.op_type == "QLinearConv") packed += pack_qconv(g, n, 3, 5, 9);
    if (n.op_type == "ConvInteger") packed += pack_qconv(g, n, 1, 3, 4);
  }
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

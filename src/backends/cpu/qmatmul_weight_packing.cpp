#include "backends/cpu/qmatmul_weight_packing.h"

#include <algorithm>

#include "backends/cpu/conv_weight_packing.h"
#include "backends/cpu/qgemm_panels.h"
#include "backends/cpu/qgemm_product.h"

namespace kestrel::backends::cpu {

namespace {

// B at input b_at, the op's inputs `slots` (the packed ones follow them).
bool pack_one(ir::Graph& g, ir::Node& n, int b_at, size_t slots) {
  if (n.has(kPackedWeightsAttr) || int(n.inputs.size()) <= b_at || n.inputs.size() > slots) return false;
  const int bv = n.inputs[size_t(b_at)];
  const auto it = bv >= 0 ? g.initializers.find(bv) : g.initializers.end();
  if (it == g.initializers.end()) return false;
  const Tensor& B = it->second;
  if ((B.dtype() != DType::Int8 && B.dtype() != DType::UInt8) || B.rank() != 2) return false;
  const QGemmPanels p = B.dtype() == DType::UInt8 ? pack_qgemm_panels(B.data<uint8_t>(), B.dim(0), B.dim(1), 128)
                                                  : pack_qgemm_panels(B.data<int8_t>(), B.dim(0), B.dim(1), 0);
  const std::string base = g.values[size_t(bv)].name;
  Tensor panels(DType::Int8, {int64_t(p.panels.size())});
  std::copy(p.panels.begin(), p.panels.end(), panels.data<int8_t>());
  Tensor sums(DType::Int32, {int64_t(p.col_sums.size())});
  std::copy(p.col_sums.begin(), p.col_sums.end(), sums.data<int32_t>());
  hand_packed_inputs(g, n, slots, {{base + "/kestrel_qgemm_panels", std::move(panels)},
                                   {base + "/kestrel_qgemm_col_sums", std::move(sums)}});
  return true;
}

}  // namespace

int pack_qmatmul_weights(ir::Graph& g) {
  if (!qgemm_available()) return 0;
  int packed = 0;
  for (ir::Node& n : g.nodes) {
    if (n.domain.empty() && n.op_type == "QLinearMatMul") packed += pack_one(g, n, 3, 8);
    if (n.domain.empty() && n.op_type == "MatMulInteger") packed += pack_one(g, n, 1, 4);
    if (n.domain == "com.microsoft" && n.op_type == "DynamicQuantizeMatMul") packed += pack_one(g, n, 1, 5);
    if (n.domain == "com.microsoft" && n.op_type == "MatMulIntegerToFloat") packed += pack_one(g, n, 1, 7);
  }
  return packed;
}

}  // namespace kestrel::backends::cpu

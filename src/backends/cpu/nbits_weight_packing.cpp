#include "backends/cpu/nbits_weight_packing.h"

#include <vector>

#include "backends/cpu/conv_weight_packing.h"
#include "ops/matmul_nbits.h"

namespace kestrel::backends::cpu {

namespace {

const Tensor* initializer(const ir::Graph& g, const ir::Node& n, size_t i) {
  if (n.inputs.size() <= i || n.inputs[i] < 0) return nullptr;
  const auto it = g.initializers.find(n.inputs[i]);
  return it == g.initializers.end() ? nullptr : &it->second;
}

// The node's dequantized weights where everything they need is constant and
// well formed (else nothing: the reference kernel runs, naming what is wrong).
bool pack_one(ir::Graph& g, ir::Node& n) {
  constexpr size_t kSlots = 6;  // A, B, scales, zero_points, g_idx, bias
  if (n.has(kPackedWeightsAttr) || n.inputs.size() > kSlots || (n.inputs.size() > 4 && n.inputs[4] >= 0)) return false;
  const int64_t K = n.attr_i("K", 0), N = n.attr_i("N", 0), bits = n.attr_i("bits", 4), block = n.attr_i("block_size", 0);
  if ((bits != 2 && bits != 4 && bits != 8) || K <= 0 || N <= 0 || block < 16 || (block & (block - 1)) != 0) return false;
  const int64_t blocks = (K + block - 1) / block;
  const Tensor* B = initializer(g, n, 1);
  const Tensor* S = initializer(g, n, 2);
  const Tensor* Z = initializer(g, n, 3);
  const bool has_zp = n.inputs.size() > 3 && n.inputs[3] >= 0;
  if (!B || !S || (has_zp && !Z) || B->dtype() != DType::UInt8 || B->numel() != N * blocks * (block * bits / 8) ||
      S->dtype() != DType::Float32 || S->numel() != N * blocks ||
      (Z && (Z->dtype() != DType::UInt8 || Z->numel() != N * ((blocks * bits + 7) / 8))))
    return false;
  std::vector<float> wt(size_t(N * K));
  ops::nbits_to_float(K, bits, block, B->data<uint8_t>(), S->data<float>(), Z ? Z->data<uint8_t>() : nullptr, 0, N,
                      wt.data());
  // Held as [K, N], as a float MatMul's weight is: the product with B
  // transposed took oneDNN 4x as long at 16 rows (bench/int4_cpu.py).
  Tensor w(DType::Float32, {K, N});
  float* wp = w.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) wp[k * N + n] = wt[size_t(n * K + k)];
  hand_packed_inputs(g, n, kSlots, {{g.values[size_t(n.inputs[1])].name + "/kestrel_dequantized", std::move(w)}});
  return true;
}

}  // namespace

int pack_nbits_weights(ir::Graph& g) {
  int packed = 0;
  for (ir::Node& n : g.nodes)
    if (n.domain == "com.microsoft" && n.op_type == "MatMulNBits") packed += pack_one(g, n);
  return packed;
}

}  // namespace kestrel::backends::cpu

// Turns a MatMul of a 4-bit blockwise-quantized weight (opset 21's int4 or
// uint4 DequantizeLinear with block_size, what weight-only quantizers write
// in the standard domain) into one com.microsoft MatMulNBits, as ONNX
// Runtime's CPU EP rewrites the same files:
//
//   DequantizeLinear(wq [K, N] int4/uint4, scale [K / block, N],
//                    [zero point], axis 0, block_size) -> MatMul(x, .) -> y
//
// becomes MatMulNBits(x, B, scales, zero points) -> y with B the same 4-bit
// values stored as MatMulNBits stores them (column by column, blocks along K,
// two a byte; int4 shifted by 8 into uint4 with its zero point, so q - zp is
// unchanged). The weights then stay 4-bit where a backend keeps them packed
// (Vulkan's kernels dequantize them as they load), where constant folding
// would have made them float32 (8x the memory and the bandwidth). Each
// dequantized weight is (q - zp) * scale as before: the same float32 values
// meet the same float32 product. Only a block_size MatMulNBits takes (a power
// of 2, at least 16), a float32 scale, and a weight read by this one MatMul.
#include "passes/passes.h"
#include "passes/qdq_params.h"

namespace kestrel::passes {
namespace {

bool four_bit(DType t) { return t == DType::Int4 || t == DType::UInt4; }

// The 4-bit value of v (an Int4 or UInt4 tensor's element, one a byte) as
// MatMulNBits' unsigned nibble.
uint8_t as_nibble(const Tensor& t, int64_t i) {
  const int32_t v = t.dtype() == DType::Int4 ? int32_t(t.data<int8_t>()[i]) + 8 : int32_t(t.data<uint8_t>()[i]);
  return uint8_t(v & 15);
}

}  // namespace

int fuse_nbits_matmuls(ir::Graph& g) {
  GraphUses uses(g);
  std::vector<int> packed;  // the 4-bit initializers now held as MatMulNBits' B
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& mm = g.nodes[i];
    if (!is_op(mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1 || mm.outputs[0] < 0) continue;
    const int x = mm.inputs[0];
    if (x < 0 || g.values[size_t(x)].dtype != DType::Float32) continue;
    const ir::Node* dw = dequantizer(g, uses, mm.inputs[1]);
    if (!dw || !uses.private_to_one_reader(mm.inputs[1])) continue;
    const Tensor* w = constant(g, dw->inputs[0]);
    const Tensor* s = dw->inputs.size() > 1 ? constant(g, dw->inputs[1]) : nullptr;
    const Tensor* z = dw->inputs.size() > 2 && dw->inputs[2] >= 0 ? constant(g, dw->inputs[2]) : nullptr;
    if (!w || !four_bit(w->dtype()) || w->rank() != 2 || !s || s->dtype() != DType::Float32 || s->rank() != 2) continue;
    if (dw->inputs.size() > 2 && dw->inputs[2] >= 0 && (!z || z->dtype() != w->dtype() || z->shape() != s->shape()))
      continue;
    const int64_t block = dw->attr_i("block_size", 0), axis = dw->attr_i("axis", 1);
    const int64_t K = w->dim(0), N = w->dim(1), blocks = (K + block - 1) / std::max<int64_t>(block, 1);
    if (block < 16 || (block & (block - 1)) != 0 || (axis != 0 && axis != -2) || s->dim(0) != blocks ||
        s->dim(1) != N)
      continue;

    // B [N, blocks, block / 2]: column n's values along K, two a byte, low
    // nibble first; the last block's tail is the zero point (dequantized: 0).
    const std::vector<float> sv = s->to_f32();
    Tensor b(DType::UInt8, {N, blocks, block / 2}), scales(DType::Float32, {N * blocks});
    const int64_t zrow = (blocks + 1) / 2;
    Tensor zp(DType::UInt8, {N, zrow});
    uint8_t* bq = b.data<uint8_t>();
    uint8_t* zq = zp.data<uint8_t>();
    std::fill(zq, zq + zp.numel(), uint8_t(0));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const uint8_t zn = z ? as_nibble(*z, blk * N + n) : uint8_t(w->dtype() == DType::Int4 ? 8 : 0);
        zq[n * zrow + blk / 2] |= uint8_t(zn << (4 * (blk % 2)));
        scales.data<float>()[n * blocks + blk] = sv[size_t(blk * N + n)];
        uint8_t* out = bq + (n * blocks + blk) * (block / 2);
        for (int64_t j = 0; j < block; j += 2) {
          const int64_t k = blk * block + j;
          const uint8_t lo = k < K ? as_nibble(*w, k * N + n) : zn, hi = k + 1 < K ? as_nibble(*w, (k + 1) * N + n) : zn;
          out[j / 2] = uint8_t(lo | (hi << 4));
        }
      }

    ir::Node f;
    f.name = mm.name;
    f.domain = "com.microsoft";
    f.op_type = "MatMulNBits";
    f.opset = 1;
    auto add_constant = [&](const std::string& stem, Tensor t) {
      const int v = fresh_value(g, mm.name + stem);
      g.values[size_t(v)].dtype = t.dtype();
      g.initializers[v] = std::move(t);
      return v;
    };
    f.inputs = {x, add_constant("_nbits_weight", std::move(b)), add_constant("_nbits_scales", std::move(scales))};
    // An int4 weight without a zero point has MatMulNBits' default (8).
    if (z || w->dtype() == DType::UInt4) f.inputs.push_back(add_constant("_nbits_zero_points", std::move(zp)));
    f.outputs = {mm.outputs[0]};
    for (auto [name, v] : {std::pair<const char*, int64_t>{"K", K}, {"N", N}, {"bits", 4}, {"block_size", block}}) {
      ir::Attribute a;
      a.kind = ir::Attribute::Kind::Int;
      a.i = v;
      f.attrs[name] = a;
    }
    packed.push_back(dw->inputs[0]);
    g.nodes[i] = std::move(f);
    ++fused;
  }
  if (fused) {
    drop_unread_dequantizers(g);
    // The unpacked copies (a byte a value) nothing reads now.
    GraphUses after(g);
    for (int v : packed)
      if (after.readers(v) == 0 && after.only_node_inputs_read(v)) g.initializers.erase(v);
  }
  return fused;
}

}  // namespace kestrel::passes

// Folds the per-channel Mul and Add constants that follow a Conv into its
// weights and bias, as ONNX Runtime's ConvMulFusion and ConvAddFusion do:
//   Conv(x, W, B) -> Mul(s) -> Add(t)   becomes   Conv(x, W * s, B * s + t),
// any run of such Muls and Adds, each reading the one before alone (PP-OCR's
// PP-LCNet writes a learnable scale and bias after every convolution as
// these two nodes, which then stand between the Conv and its activation).
// Float32 arithmetic, as ONNX Runtime folds. W is a float32 initializer, or
// in a QDQ model DequantizeLinear(Wq, ws, 0) read by this Conv alone, whose
// scale then takes the Muls (ws * s: the integer weights stay as they are,
// so the Conv can still become one QLinearConv); B a float32 initializer or
// absent. Not a Conv already carrying a fused activation.
#include <optional>

#include "ops/epilogue.h"
#include "passes/channel_constant.h"
#include "passes/graph_uses.h"
#include "passes/passes.h"

namespace kestrel::passes {
namespace {

// The weights' scale where W is DequantizeLinear(Wq, scale[, zero]) with
// scale a float32 initializer of one value or one per output channel (axis
// 0), every zero point 0 and W read by the Conv alone: the DequantizeLinear
// node's index. -1 otherwise.
int dequantized_weights(const ir::Graph& g, const GraphUses& uses, int w, int64_t M) {
  const int p = uses.producer(w);
  if (p < 0 || !uses.private_to_one_reader(w)) return -1;
  const ir::Node& dq = g.nodes[size_t(p)];
  if (dq.op_type != "DequantizeLinear" || !dq.domain.empty() || dq.inputs.size() < 2) return -1;
  const Tensor* scale = float_init(g, dq.inputs[1]);
  if (!scale || (scale->numel() != 1 && (scale->numel() != M || dq.attr_i("axis", 1) != 0))) return -1;
  if (dq.inputs.size() > 2 && dq.inputs[2] >= 0) {
    auto z = g.initializers.find(dq.inputs[2]);
    if (z == g.initializers.end()) return -1;
    for (int64_t v : z->second.to_i64())
      if (v != 0) return -1;
  }
  return p;
}

}  // namespace

int fold_conv_affine(ir::Graph& g) {
  GraphUses uses(g);
  std::vector<bool> removed(g.nodes.size(), false);
  int folded = 0;
  for (size_t ci = 0; ci < g.nodes.size(); ++ci) {
    ir::Node& conv = g.nodes[ci];
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1 || conv.inputs.size() < 2 ||
        conv.has(ops::kEpilogueAttr))
      continue;
    // The output channels and the weights' rank: from W, or from the
    // integer weights a DequantizeLinear reads.
    const Tensor* w = float_init(g, conv.inputs[1]);
    int dq = -1;
    const Tensor* shape_of = w;
    if (!w) {
      const int p = uses.producer(conv.inputs[1]);
      if (p >= 0 && !g.nodes[size_t(p)].inputs.empty()) {
        auto q = g.initializers.find(g.nodes[size_t(p)].inputs[0]);
        if (q != g.initializers.end() && q->second.rank() >= 3) {
          shape_of = &q->second;
          dq = dequantized_weights(g, uses, conv.inputs[1], q->second.dim(0));
        }
      }
      if (dq < 0) continue;
    }
    const bool has_b = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
    const Tensor* b = has_b ? float_init(g, conv.inputs[2]) : nullptr;
    if (shape_of->rank() < 3 || (has_b && (!b || b->numel() != shape_of->dim(0)))) continue;
    const int64_t M = shape_of->dim(0), rank = shape_of->rank();
    // Per output channel: the factor on W and the new bias.
    std::vector<float> factor(size_t(M), 1.0f), bias = b ? b->to_f32() : std::vector<float>(size_t(M), 0.0f);
    bool scaled = false, changed = false;
    int y = conv.outputs[0];
    for (int at; (at = uses.sole_reader(y)) >= 0;) {
      const size_t r = size_t(at);
      const ir::Node& next = g.nodes[r];
      if (removed[r]) break;
      if (auto s = channel_constant(g, next, "Mul", y, M, int(rank))) {
        for (int64_t m = 0; m < M; ++m) {
          factor[size_t(m)] *= (*s)[size_t(m)];
          bias[size_t(m)] *= (*s)[size_t(m)];
        }
        scaled = true;
      } else if (auto t = channel_constant(g, next, "Add", y, M, int(rank))) {
        for (int64_t m = 0; m < M; ++m) bias[size_t(m)] += (*t)[size_t(m)];
      } else {
        break;
      }
      changed = true;
      removed[r] = true;
      y = next.outputs[0];
    }
    if (!changed) continue;
    // Fresh initializers: the originals may be shared with other nodes.
    if (scaled && w) {
      Tensor nw = w->clone();
      float* wd = nw.data<float>();
      const int64_t inner = nw.numel() / M;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t e = 0; e < inner; ++e) wd[m * inner + e] *= factor[size_t(m)];
      const int wv = g.add_value(conv.name + "/affine_folded_weight");
      g.values[size_t(wv)].dtype = DType::Float32;
      g.initializers[wv] = std::move(nw);
      conv.inputs[1] = wv;
    } else if (scaled) {
      ir::Node& deq = g.nodes[size_t(dq)];
      const std::vector<float> old = g.initializers.at(deq.inputs[1]).to_f32();
      std::vector<float> scale(old.size() == 1 ? 1 : size_t(M));
      bool uniform = true;
      for (int64_t m = 0; m < M; ++m) uniform = uniform && factor[size_t(m)] == factor[0];
      if (old.size() == 1 && !uniform) {  // one scale for the tensor, a factor per channel: per channel now
        scale.assign(size_t(M), old[0]);
        ir::Attribute axis;
        axis.kind = ir::Attribute::Kind::Int;
        axis.i = 0;
        deq.attrs["axis"] = axis;
      } else {
        scale = old;
      }
      for (size_t m = 0; m < scale.size(); ++m) scale[m] *= factor[scale.size() == 1 ? 0 : m];
      const int sv = g.add_value(conv.name + "/affine_folded_weight_scale");
      g.values[size_t(sv)].dtype = DType::Float32;
      g.initializers[sv] = Tensor::from_f32({int64_t(scale.size())}, scale);
      if (scale.size() == 1) g.initializers[sv] = Tensor::scalar_f32(scale[0]);
      deq.inputs[1] = sv;
      // A zero point must match the scale's shape: per channel now, zeros.
      if (deq.inputs.size() > 2 && deq.inputs[2] >= 0 && scale.size() != old.size()) {
        const Tensor& z = g.initializers.at(deq.inputs[2]);
        Tensor zeros(z.dtype(), {M});
        std::fill(static_cast<uint8_t*>(zeros.raw()), static_cast<uint8_t*>(zeros.raw()) + zeros.nbytes(), uint8_t(0));
        const int zv = g.add_value(conv.name + "/affine_folded_weight_zero_point");
        g.values[size_t(zv)].dtype = z.dtype();
        g.initializers[zv] = std::move(zeros);
        deq.inputs[2] = zv;
      }
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

// Turns the QDQ form of a quantized convolution into one QLinearConv:
//
//   DequantizeLinear(xq) --+
//   DequantizeLinear(wq) ---> Conv [-> Relu] -> QuantizeLinear -> yq
//   bias (float32 or DequantizeLinear(int32)) --+
//
// becomes QLinearConv(xq, xs, xzp, wq, ws, wzp, ys, yzp, bias_int32) -> yq,
// which runs on integer products instead of a float convolution between
// quantizers. This is the rewrite ONNX Runtime's CPU EP makes on the same
// files, with its arithmetic, so the two agree bit for bit where they did
// not before (a float convolution's summation order moves values across
// the output quantizer's rounding boundaries, and the flips compound):
//   - a float32 bias becomes int32 as round-half-even(bias / (xs * ws)),
//     quotient and product in float32, saturated to int32;
//   - a Relu between Conv and QuantizeLinear goes only where the quantizer's
//     zero point is its type's lowest value, where clamping at zero changes
//     nothing after quantization.
// Beyond ONNX Runtime's rewrite, a Conv that carries any other activation
// (passes/fuse_activation.cpp, run first: SiLU, Clip, a Relu before another
// zero point...) becomes a QLinearConv that keeps it: each integer sum goes
// back to its real value, through the activation, and is quantized as
// QuantizeLinear does (ops/conv.cpp). ONNX Runtime runs those chains in
// float between the quantizers, so there the two agree to within a step of
// the output's scale rather than bit for bit.
// Scales and zero points must be initializers, the activation's and the
// output's per tensor, the weight's per tensor or per output channel (axis
// 0); the Conv's (and Relu's) output must be read by the next node alone.
// Anything else keeps its float form. The DequantizeLinear nodes nothing
// reads any more go too.
//
// Runs before constant folding, which would turn the weights'
// DequantizeLinear into float initializers.
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/epilogue.h"
#include "passes/graph_uses.h"
#include "passes/qdq_params.h"
#include "passes/passes.h"

namespace kestrel::passes {
namespace {

class QdqConvFusion {
 public:
  explicit QdqConvFusion(ir::Graph& g) : g_(g), uses_(g), removed_(g.nodes.size(), false) {}

  int run() {
    int fused = 0;
    const size_t count = g_.nodes.size();
    for (size_t i = 0; i < count; ++i)
      if (is_op(g_.nodes[i], "Conv") && try_fuse(i)) ++fused;
    if (fused) place_fused_nodes();
    return fused;
  }

 private:
  const ir::Node* dequantizer(int v) const { return passes::dequantizer(g_, uses_, v); }
  int sole_reader(int v) const { return uses_.sole_reader(v); }
  int zero_point_of(const QuantParams& p, const std::string& stem, DType type, const Shape& shape) {
    return passes::zero_point_of(g_, p, stem, type, shape);
  }
  int fresh_value(const std::string& stem) { return passes::fresh_value(g_, stem); }

  // The bias as int32 in the accumulator's scale, or -1 if it has a form the
  // fusion does not take. No bias: -2.
  int int32_bias(const ir::Node& conv, float xs, const std::vector<float>& ws, int64_t M) {
    if (conv.inputs.size() < 3 || conv.inputs[2] < 0) return -2;
    const int b = conv.inputs[2];
    if (const Tensor* t = constant(g_, b)) {
      if (t->dtype() != DType::Float32 || t->numel() != M) return -1;
      const std::vector<float> bf = t->to_f32();
      Tensor q(DType::Int32, {M});
      int32_t* out = q.data<int32_t>();
      for (int64_t m = 0; m < M; ++m) {
        const float r = std::nearbyint(bf[size_t(m)] / (xs * ws[ws.size() == 1 ? 0 : size_t(m)]));
        out[m] = !(r > -2147483648.0f) ? std::numeric_limits<int32_t>::min()
                 : r >= 2147483648.0f  ? std::numeric_limits<int32_t>::max()
                                       : int32_t(r);
      }
      const int v = fresh_value(conv.name + "_bias_int32");
      g_.values[size_t(v)].dtype = DType::Int32;
      g_.initializers[v] = std::move(q);
      return v;
    }
    const ir::Node* dq = dequantizer(b);
    if (!dq) return -1;
    const Tensor* q = constant(g_, dq->inputs[0]);
    const QuantParams p = quant_params(g_, *dq);
    if (!q || q->dtype() != DType::Int32 || q->numel() != M || !p.scale) return -1;
    if (p.zero_point)
      for (int64_t z : p.zero_point->to_i64())
        if (z != 0) return -1;
    return dq->inputs[0];
  }

  bool try_fuse(size_t ci) {
    const ir::Node& conv = g_.nodes[ci];
    if (conv.inputs.size() < 2 || conv.outputs.size() != 1 || conv.outputs[0] < 0) return false;
    const ir::Node* dx = dequantizer(conv.inputs[0]);
    const ir::Node* dw = dequantizer(conv.inputs[1]);
    if (!dx || !dw) return false;
    const QuantParams px = quant_params(g_, *dx), pw = quant_params(g_, *dw);
    if (!per_tensor(px)) return false;
    const DType xvalue = g_.values[size_t(dx->inputs[0])].dtype;  // Undefined where the loader did not infer it
    const DType xtype = px.zero_point ? px.zero_point->dtype() : xvalue;
    if (!eight_bit(xtype) || (xvalue != DType::Undefined && xvalue != xtype)) return false;

    // The weight: an 8-bit initializer [M, C/group, k...], per tensor or per
    // output channel on axis 0 with a zero point of the same shape.
    const Tensor* w = constant(g_, dw->inputs[0]);
    if (!w || !eight_bit(w->dtype()) || w->shape().size() < 3 || !pw.scale) return false;
    const int64_t M = w->shape()[0];
    if (pw.zero_point && (pw.zero_point->dtype() != w->dtype() || pw.zero_point->numel() != pw.scale->numel()))
      return false;
    if (pw.scale->numel() != 1) {
      const int64_t axis = dw->attr_i("axis", 1);
      if (pw.scale->numel() != M || (axis != 0 && axis != -int64_t(w->shape().size()))) return false;
    }

    // Conv [-> Relu] -> QuantizeLinear, each output read by the next alone;
    // or a Conv carrying its activation -> QuantizeLinear.
    const ops::Epilogue carried = ops::Epilogue::of(conv);
    int next = sole_reader(conv.outputs[0]);
    int relu = -1;
    if (next >= 0 && is_op(g_.nodes[size_t(next)], "Relu") && g_.nodes[size_t(next)].outputs.size() == 1) {
      relu = next;
      next = sole_reader(g_.nodes[size_t(relu)].outputs[0]);
    }
    if (next < 0 || !is_op(g_.nodes[size_t(next)], "QuantizeLinear") || removed_[size_t(next)]) return false;
    const ir::Node& q = g_.nodes[size_t(next)];
    const QuantParams py = quant_params(g_, q);
    if (!per_tensor(py) || q.outputs.size() != 1 || q.outputs[0] < 0) return false;
    if (!py.zero_point && q.attr_i("output_dtype", 0) != 0) return false;
    const int64_t yzp = py.zero_point ? py.zero_point->to_i64()[0] : 0;
    const bool zp_lowest = yzp == (py.zero_point && py.zero_point->dtype() == DType::Int8 ? -128 : 0);
    if (relu >= 0 && (carried.kind != ops::Activation::None || !zp_lowest)) return false;
    // A carried Relu at the lowest zero point goes, as a Relu node does.
    const bool keep_activation = carried.kind != ops::Activation::None && !(carried.kind == ops::Activation::Relu && zp_lowest);

    const float xs = px.scale->to_f32()[0];
    const int bias = int32_bias(conv, xs, pw.scale->to_f32(), M);
    if (bias == -1) return false;

    ir::Node f;
    f.name = conv.name;
    f.op_type = "QLinearConv";
    f.opset = conv.opset;
    for (const char* a : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
      if (const ir::Attribute* at = conv.attr(a)) f.attrs[a] = *at;
    if (keep_activation)
      for (const char* a : {ops::kEpilogueAttr, ops::kEpilogueParamsAttr})
        if (const ir::Attribute* at = conv.attr(a)) f.attrs[a] = *at;
    // A zero point left out is a zero of its tensor's type: the data's and
    // the weight's their own, a quantizer's output uint8 (QuantizeLinear's
    // output_dtype was refused above).
    f.inputs = {dx->inputs[0], dx->inputs[1], zero_point_of(px, conv.name + "_x", xtype, {}),
                dw->inputs[0], dw->inputs[1], zero_point_of(pw, conv.name + "_w", w->dtype(), pw.scale->shape()),
                q.inputs[1],   zero_point_of(py, conv.name + "_y", DType::UInt8, {})};
    if (bias >= 0) f.inputs.push_back(bias);
    f.outputs = {q.outputs[0]};
    removed_[ci] = removed_[size_t(next)] = true;
    if (relu >= 0) removed_[size_t(relu)] = true;
    new_nodes_.push_back({ci, std::move(f)});
    return true;
  }

  // Puts each QLinearConv where its Conv was, and drops the quantizers that
  // only the fused nodes read.
  void place_fused_nodes() {
    for (auto& [at, node] : new_nodes_) {
      g_.nodes[at] = std::move(node);
      removed_[at] = false;
    }
    erase_nodes(g_, removed_);
    passes::drop_unread_dequantizers(g_);
  }

  ir::Graph& g_;
  GraphUses uses_;
  std::vector<bool> removed_;
  std::vector<std::pair<size_t, ir::Node>> new_nodes_;  // each QLinearConv and its Conv's place
};

}  // namespace

int fuse_qdq_convs(ir::Graph& g) { return QdqConvFusion(g).run(); }

}  // namespace kestrel::passes

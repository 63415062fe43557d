// Turns the QDQ form of a quantized matrix product into integer products,
// the rewrites ONNX Runtime's CPU EP makes on the same files (a transformer
// quantized by `kestrel quantize` or `quantize_static` is mostly such
// MatMuls):
//
//   DequantizeLinear(xq) --+
//   DequantizeLinear(wq) ---> MatMul -> QuantizeLinear -> yq
//
// becomes QLinearMatMul(xq, xs, xzp, wq, ws, wzp, ys, yzp) -> yq, one
// requantization instead of a float product between quantizers; and where
// the MatMul's output stays float (a Linear's bias added next, then a
// residual sum or an activation in float),
//
//   DequantizeLinear(xq), DequantizeLinear(wq) -> MatMul [-> Add(., bias)] -> y
//
// becomes com.microsoft MatMulIntegerToFloat(xq, wq, xs, ws, xzp, wzp
// [, bias]) -> y: exact integer sums, each scaled once by xs * ws[n], where
// the float form rounds every product and partial sum. The activation's and
// the output's parameters must be per tensor; the weight an 8-bit
// initializer [K, N], per tensor or per column (axis 1) with a zero point of
// the same shape; the bias a float initializer of N values; each
// intermediate read by the next node alone. Anything else keeps its float
// form. Runs before constant folding, which would turn the weights'
// DequantizeLinear into float initializers.
#include "passes/passes.h"
#include "passes/qdq_params.h"

namespace kestrel::passes {

int fuse_qdq_matmuls(ir::Graph& g) {
  GraphUses uses(g);
  std::vector<bool> removed(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& mm = g.nodes[i];
    if (!is_op(mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1 || mm.outputs[0] < 0) continue;
    const ir::Node* dx = dequantizer(g, uses, mm.inputs[0]);
    const ir::Node* dw = dequantizer(g, uses, mm.inputs[1]);
    if (!dx || !dw) continue;
    const QuantParams px = quant_params(g, *dx), pw = quant_params(g, *dw);
    if (!per_tensor(px)) continue;
    const DType xvalue = g.values[size_t(dx->inputs[0])].dtype;  // Undefined where the loader did not infer it
    const DType xtype = px.zero_point ? px.zero_point->dtype() : xvalue;
    if (!eight_bit(xtype) || (xvalue != DType::Undefined && xvalue != xtype)) continue;
    const Tensor* w = constant(g, dw->inputs[0]);
    if (!w || !eight_bit(w->dtype()) || w->rank() != 2 || !pw.scale) continue;
    const int64_t N = w->dim(1);
    if (pw.zero_point && (pw.zero_point->dtype() != w->dtype() || pw.zero_point->numel() != pw.scale->numel()))
      continue;
    if (pw.scale->numel() != 1) {
      const int64_t axis = dw->attr_i("axis", 1);
      if (pw.scale->numel() != N || pw.scale->rank() != 1 || (axis != 1 && axis != -1)) continue;
    }
    // A quantizer next: QLinearMatMul.
    const int next = uses.sole_reader(mm.outputs[0]);
    const ir::Node* q = next >= 0 && !removed[size_t(next)] && is_op(g.nodes[size_t(next)], "QuantizeLinear")
                            ? &g.nodes[size_t(next)]
                            : nullptr;
    const QuantParams py = q ? quant_params(g, *q) : QuantParams{};
    if (q && (!per_tensor(py) || q->outputs.size() != 1 || q->outputs[0] < 0 ||
              (!py.zero_point && q->attr_i("output_dtype", 0) != 0)))
      continue;
    ir::Node f;
    f.name = mm.name;
    // A zero point left out is a zero of its tensor's type: the data's and
    // the weight's their own, a quantizer's output uint8.
    const int xzp = zero_point_of(g, px, mm.name + "_x", xtype, {});
    const int wzp = zero_point_of(g, pw, mm.name + "_w", w->dtype(), pw.scale->shape());
    if (q) {
      f.op_type = "QLinearMatMul";
      f.opset = mm.opset;
      const int yzp = zero_point_of(g, py, mm.name + "_y", DType::UInt8, {});
      f.inputs = {dx->inputs[0], dx->inputs[1], xzp, dw->inputs[0], dw->inputs[1], wzp, q->inputs[1], yzp};
      f.outputs = {q->outputs[0]};
      removed[size_t(next)] = true;
    } else {
      f.domain = "com.microsoft";
      f.op_type = "MatMulIntegerToFloat";
      f.opset = 1;
      f.inputs = {dx->inputs[0], dw->inputs[0], dx->inputs[1], dw->inputs[1], xzp, wzp};
      f.outputs = {mm.outputs[0]};
      absorb_bias_add(g, next, mm.outputs[0], N, f, removed);  // a bias added next joins the epilogue
    }
    g.nodes[i] = std::move(f);
    ++fused;
  }
  if (fused) {
    erase_nodes(g, removed);
    drop_unread_dequantizers(g);
  }
  return fused;
}

}  // namespace kestrel::passes

// Turns the QDQ form of a quantized matrix product into one QLinearMatMul:
//
//   DequantizeLinear(xq) --+
//   DequantizeLinear(wq) ---> MatMul -> QuantizeLinear -> yq
//
// becomes QLinearMatMul(xq, xs, xzp, wq, ws, wzp, ys, yzp) -> yq, integer
// products with one requantization instead of a float product between
// quantizers: the rewrite ONNX Runtime's CPU EP makes on the same files
// (a transformer quantized by `kestrel quantize` or `quantize_static` is
// mostly such MatMuls). The activation's and the output's parameters must
// be per tensor; the weight an 8-bit initializer [K, N], per tensor or per
// column (axis 1) with a zero point of the same shape; the MatMul's output
// read by the QuantizeLinear alone. Anything else keeps its float form.
// Runs before constant folding, which would turn the weights'
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
    const int next = uses.sole_reader(mm.outputs[0]);
    if (next < 0 || removed[size_t(next)] || !is_op(g.nodes[size_t(next)], "QuantizeLinear")) continue;
    const ir::Node& q = g.nodes[size_t(next)];
    const QuantParams py = quant_params(g, q);
    if (!per_tensor(py) || q.outputs.size() != 1 || q.outputs[0] < 0) continue;
    if (!py.zero_point && q.attr_i("output_dtype", 0) != 0) continue;

    ir::Node f;
    f.name = mm.name;
    f.op_type = "QLinearMatMul";
    f.opset = mm.opset;
    // A quantizer without a zero point quantizes to uint8; the weight's
    // takes its own type.
    const int xzp = zero_point_of(g, px, mm.name + "_x", DType::UInt8, {});
    const int wzp = zero_point_of(g, pw, mm.name + "_w", w->dtype(), pw.scale->shape());
    const int yzp = zero_point_of(g, py, mm.name + "_y", DType::UInt8, {});
    f.inputs = {dx->inputs[0], dx->inputs[1], xzp, dw->inputs[0], dw->inputs[1], wzp, q.inputs[1], yzp};
    f.outputs = {q.outputs[0]};
    removed[size_t(next)] = true;
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

// Turns the form ONNX Runtime's dynamic quantization (quantize_dynamic)
// writes for a MatMul into one com.microsoft DynamicQuantizeMatMul:
//
//   DynamicQuantizeLinear(x) -> xq, xs, xzp
//   Mul(xs, ws) -> s
//   MatMulInteger(xq, wq, xzp [, wzp]) -> Cast(to float) -> Mul(., s) [-> Add(., bias)] -> y
//
// becomes DynamicQuantizeMatMul(x, wq, ws, wzp [, bias]) -> y, the rewrite
// ONNX Runtime's CPU EP makes on the same files: the int32 sums go straight
// to float in the product's epilogue instead of through two more passes
// over the output. The outputs are the same bits: float(acc) * (xs * ws),
// then + bias, in the same order. The weight must be an 8-bit initializer
// [K, N] with a constant zero point and a constant float scale, each one
// value or one per column; the bias a float initializer of N values; each
// intermediate read by the next node alone. The DynamicQuantizeLinear stays
// while anything else reads it (the Q, K and V projections share one; each
// fused node quantizes its input again, as ONNX Runtime's do).
#include "passes/passes.h"
#include "passes/qdq_params.h"

namespace kestrel::passes {

namespace {

// The node at `i` when it is `op` (default domain), else null.
const ir::Node* node_if(const ir::Graph& g, int i, const char* op) {
  return i >= 0 && is_op(g.nodes[size_t(i)], op) ? &g.nodes[size_t(i)] : nullptr;
}

// The float initializer holding one value or N (a vector or a scalar).
const Tensor* per_column_floats(const ir::Graph& g, int v, int64_t N, bool one_allowed) {
  const Tensor* t = constant(g, v);
  if (!t || t->dtype() != DType::Float32 || t->rank() > 1) return nullptr;
  return t->numel() == N || (one_allowed && t->numel() == 1) ? t : nullptr;
}

// Drops DynamicQuantizeLinear nodes none of whose outputs is read any more.
void drop_unread_quantizers(ir::Graph& g) {
  GraphUses uses(g);
  std::vector<bool> dead(g.nodes.size(), false);
  bool any = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (!is_op(n, "DynamicQuantizeLinear")) continue;
    bool read = false;
    for (int v : n.outputs) read = read || (v >= 0 && (uses.readers(v) > 0 || !uses.only_node_inputs_read(v)));
    dead[i] = !read;
    any = any || !read;
  }
  if (any) erase_nodes(g, dead);
}

}  // namespace

int fuse_dynamic_quantize_matmuls(ir::Graph& g) {
  GraphUses uses(g);
  std::vector<bool> removed(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& mi = g.nodes[i];
    if (!is_op(mi, "MatMulInteger") || mi.inputs.size() < 3 || mi.outputs.size() != 1 || mi.outputs[0] < 0) continue;
    const ir::Node* dq = node_if(g, mi.inputs[0] < 0 ? -1 : uses.producer(mi.inputs[0]), "DynamicQuantizeLinear");
    if (!dq || dq->outputs.size() != 3 || dq->outputs[0] != mi.inputs[0] || dq->outputs[2] != mi.inputs[2]) continue;
    const Tensor* w = constant(g, mi.inputs[1]);
    if (!w || !eight_bit(w->dtype()) || w->rank() != 2) continue;
    const int64_t N = w->dim(1);
    const int wzp = mi.inputs.size() > 3 ? mi.inputs[3] : -1;
    if (wzp >= 0) {
      const Tensor* z = constant(g, wzp);
      if (!z || z->dtype() != w->dtype() || z->rank() > 1 || (z->numel() != 1 && z->numel() != N)) continue;
    }
    const int cast_at = uses.sole_reader(mi.outputs[0]);
    const ir::Node* cast = node_if(g, cast_at, "Cast");
    if (!cast || cast->attr_i("to", 0) != int64_t(DType::Float32) || cast->outputs.size() != 1) continue;
    const int mul_at = uses.sole_reader(cast->outputs[0]);
    const ir::Node* mul = node_if(g, mul_at, "Mul");
    if (!mul || mul->inputs.size() != 2 || mul->outputs.size() != 1 || mul->outputs[0] < 0) continue;
    const int s = mul->inputs[0] == cast->outputs[0] ? mul->inputs[1] : mul->inputs[0];
    const int scale_at = uses.sole_reader(s);
    const ir::Node* scale = node_if(g, s < 0 ? -1 : uses.producer(s), "Mul");
    if (!scale || scale_at != mul_at || scale->inputs.size() != 2) continue;
    const int ws = scale->inputs[0] == dq->outputs[1] ? scale->inputs[1] : scale->inputs[0];
    if ((scale->inputs[0] != dq->outputs[1] && scale->inputs[1] != dq->outputs[1]) ||
        !per_column_floats(g, ws, N, true))
      continue;
    ir::Node f;
    f.name = mi.name;
    f.domain = "com.microsoft";
    f.op_type = "DynamicQuantizeMatMul";
    f.opset = 1;
    f.inputs = {dq->inputs[0], mi.inputs[1], ws, wzp};
    f.outputs = {mul->outputs[0]};
    // A bias added next (quantize_dynamic leaves a Linear's Add after the Mul).
    absorb_bias_add(g, uses.sole_reader(mul->outputs[0]), mul->outputs[0], N, f, removed);
    removed[size_t(cast_at)] = true;
    removed[size_t(mul_at)] = true;
    removed[size_t(uses.producer(s))] = true;
    g.nodes[i] = std::move(f);
    ++fused;
  }
  if (fused) {
    erase_nodes(g, removed);
    drop_unread_quantizers(g);
  }
  return fused;
}

}  // namespace kestrel::passes

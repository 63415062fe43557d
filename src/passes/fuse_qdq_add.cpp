// Turns the QDQ form of an addition of two quantized tensors into one
// com.kestrel QdqAdd (ops/qdq_add.cpp), with the same bits:
//
//   DequantizeLinear(aq) --+
//                          +--> Add [-> Relu] -> QuantizeLinear -> yq
//   DequantizeLinear(bq) --+
//
// A residual block's addition in a quantized model (BlazeFace's sixteen,
// each before a Relu) then reads and writes 8-bit data once instead of
// making two float tensors, their sum, its Relu and the quantizer's pass.
// Every quantizer per tensor with constant scale and zero point (each zero
// point present: it gives the type); a and b of one fully known shape; the
// Add's (and Relu's) output read by the next node alone. The
// DequantizeLinear nodes stay where other nodes read them.

#include "ops/epilogue.h"
#include "passes/graph_uses.h"
#include "passes/passes.h"
#include "passes/qdq_params.h"

namespace kestrel::passes {
namespace {

// A DequantizeLinear per tensor with its zero point, producing v; null otherwise.
const ir::Node* per_tensor_dequantizer(const ir::Graph& g, const GraphUses& uses, int v) {
  const int p = v < 0 ? -1 : uses.producer(v);
  if (p < 0 || !is_op(g.nodes[size_t(p)], "DequantizeLinear")) return nullptr;
  const ir::Node& dq = g.nodes[size_t(p)];
  const QuantParams q = quant_params(g, dq);
  return per_tensor(q) && q.zero_point ? &dq : nullptr;
}

bool known_shape(const ir::Value& v) {
  if (!v.shape) return false;
  for (const ir::Dim& d : *v.shape)
    if (d.value < 0) return false;
  return true;
}

}  // namespace

int fuse_qdq_adds(ir::Graph& g) {
  GraphUses uses(g);
  std::vector<bool> removed(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& add = g.nodes[i];
    if (!is_op(add, "Add") || add.inputs.size() != 2 || add.outputs.size() != 1 || removed[i]) continue;
    const ir::Node* da = per_tensor_dequantizer(g, uses, add.inputs[0]);
    const ir::Node* db = per_tensor_dequantizer(g, uses, add.inputs[1]);
    if (!da || !db) continue;
    const ir::Value &va = g.values[size_t(add.inputs[0])], &vb = g.values[size_t(add.inputs[1])];
    if (!known_shape(va) || !known_shape(vb) || va.shape->size() != vb.shape->size()) continue;
    bool same = true;
    for (size_t d = 0; d < va.shape->size(); ++d) same = same && (*va.shape)[d].value == (*vb.shape)[d].value;
    if (!same) continue;
    // [Relu ->] QuantizeLinear, each reading the one before alone.
    int y = add.outputs[0], relu = -1, at = uses.sole_reader(y);
    if (at < 0) continue;
    if (is_op(g.nodes[size_t(at)], "Relu") && g.nodes[size_t(at)].outputs.size() == 1) {
      relu = at;
      y = g.nodes[size_t(at)].outputs[0];
      if ((at = uses.sole_reader(y)) < 0) continue;
    }
    const size_t next = size_t(at);
    const ir::Node& q = g.nodes[next];
    if (!is_op(q, "QuantizeLinear") || q.outputs.size() != 1 || q.inputs[0] != y) continue;
    const QuantParams pq = quant_params(g, q);
    if (!per_tensor(pq) || !pq.zero_point) continue;

    ir::Node f;
    f.name = add.name;
    f.op_type = "QdqAdd";
    f.domain = "com.kestrel";
    f.opset = 1;
    f.inputs = {da->inputs[0], da->inputs[1], da->inputs[2], db->inputs[0], db->inputs[1], db->inputs[2],
                q.inputs[1],   q.inputs[2]};
    f.outputs = {q.outputs[0]};
    if (relu >= 0) {
      ir::Attribute kind;
      kind.kind = ir::Attribute::Kind::Int;
      kind.i = int64_t(ops::Activation::Relu);
      f.attrs[ops::kEpilogueAttr] = kind;
      removed[size_t(relu)] = true;
    }
    removed[next] = true;
    g.nodes[i] = std::move(f);
    ++fused;
  }
  erase_nodes(g, removed);
  if (fused) drop_unread_dequantizers(g);
  return fused;
}

}  // namespace kestrel::passes

// The parameters of QuantizeLinear and DequantizeLinear nodes as the QDQ
// fusions read them (fuse_qdq_conv.cpp, fuse_qdq_matmul.cpp, fuse_qdq_add.cpp).
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/graph_uses.h"

namespace kestrel::passes {

inline bool is_op(const ir::Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

inline bool eight_bit(DType t) { return t == DType::UInt8 || t == DType::Int8; }

// A quantizer's parameters: input 1 the scale, input 2 the zero point (its
// type is the quantized type; absent: uint8 zero). Null scale: not constant.
struct QuantParams {
  const Tensor* scale = nullptr;
  const Tensor* zero_point = nullptr;
  int zero_point_id = -1;
};

inline QuantParams quant_params(const ir::Graph& g, const ir::Node& n) {
  QuantParams p;
  p.scale = n.inputs.size() > 1 ? constant(g, n.inputs[1]) : nullptr;
  if (!p.scale || p.scale->dtype() != DType::Float32) p.scale = nullptr;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    p.zero_point_id = n.inputs[2];
    p.zero_point = constant(g, n.inputs[2]);
    if (!p.zero_point) p.scale = nullptr;  // a computed zero point: not fused
  }
  if (n.attr_i("block_size", 0) != 0) p.scale = nullptr;
  return p;
}

// Per tensor: one scale and at most one zero point, of an 8-bit type.
inline bool per_tensor(const QuantParams& p) {
  return p.scale && p.scale->numel() == 1 &&
         (!p.zero_point || (p.zero_point->numel() == 1 && eight_bit(p.zero_point->dtype())));
}

// The node producing v when it is a DequantizeLinear (else null).
inline const ir::Node* dequantizer(const ir::Graph& g, const GraphUses& uses, int v) {
  const int p = v < 0 ? -1 : uses.producer(v);
  return p >= 0 && is_op(g.nodes[size_t(p)], "DequantizeLinear") ? &g.nodes[size_t(p)] : nullptr;
}

// A new value named `stem` (or stem_1, stem_2... where that name is taken).
inline int fresh_value(ir::Graph& g, const std::string& stem) {
  std::string name = stem;
  for (int k = 1; g.find(name) >= 0; ++k) name = stem + "_" + std::to_string(k);
  return g.add_value(name);
}

// A quantizer's zero point for a fused node: its own, or an initializer of
// zeros of `type` and `shape` when it has none.
inline int zero_point_of(ir::Graph& g, const QuantParams& p, const std::string& stem, DType type, const Shape& shape) {
  if (p.zero_point_id >= 0) return p.zero_point_id;
  const int v = fresh_value(g, stem + "_zero_point");
  Tensor z(type, shape);
  std::memset(z.raw(), 0, z.nbytes());
  g.values[size_t(v)].dtype = type;
  g.initializers[v] = std::move(z);
  return v;
}

// Drops the DequantizeLinear nodes nothing reads any more (after a fusion
// took their readers), until none is left.
inline void drop_unread_dequantizers(ir::Graph& g) {
  for (bool again = true; again;) {
    again = false;
    GraphUses uses(g);
    std::vector<bool> dead(g.nodes.size(), false);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ir::Node& n = g.nodes[i];
      if (is_op(n, "DequantizeLinear") && n.outputs.size() == 1 && n.outputs[0] >= 0 && uses.readers(n.outputs[0]) == 0 &&
          uses.only_node_inputs_read(n.outputs[0]))
        dead[i] = again = true;
    }
    if (again) erase_nodes(g, dead);
  }
}

// A Linear's bias Add after a fused product, taken into the fused node f
// (DynamicQuantizeMatMul, MatMulIntegerToFloat: the bias is their last
// input): when the node at `add_at` (-1: none) is an Add of the product's
// output and a float32 initializer of N values, the bias joins f's inputs,
// the Add's output becomes f's, and the Add is marked removed.
inline bool absorb_bias_add(const ir::Graph& g, int add_at, int product, int64_t N, ir::Node& f,
                            std::vector<bool>& removed) {
  if (add_at < 0 || removed[size_t(add_at)]) return false;
  const ir::Node& add = g.nodes[size_t(add_at)];
  if (!is_op(add, "Add") || add.inputs.size() != 2 || add.outputs.size() != 1 || add.outputs[0] < 0) return false;
  const int b = add.inputs[0] == product ? add.inputs[1] : add.inputs[0];
  const Tensor* bias = constant(g, b);
  if (!bias || bias->dtype() != DType::Float32 || bias->rank() > 1 || bias->numel() != N) return false;
  f.inputs.push_back(b);
  f.outputs = {add.outputs[0]};
  removed[size_t(add_at)] = true;
  return true;
}

}  // namespace kestrel::passes

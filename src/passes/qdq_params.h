// The parameters of QuantizeLinear and DequantizeLinear nodes as the QDQ
// fusions read them (fuse_qdq_conv.cpp, fuse_qdq_add.cpp).
#pragma once
#include "ir/graph.h"
#include "passes/graph_uses.h"

namespace kestrel::passes {

inline bool is_op(const ir::Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

inline const Tensor* constant(const ir::Graph& g, int v) {
  if (v < 0) return nullptr;
  auto it = g.initializers.find(v);
  return it == g.initializers.end() ? nullptr : &it->second;
}

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

}  // namespace kestrel::passes

// Reading the constant operand of a per-channel Mul or Add after a
// convolution, for the passes that fold one into the convolution's weights
// (fold_batchnorm.cpp, fold_conv_affine.cpp).
#pragma once
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace kestrel::passes {

// The float32 initializer v, or null.
inline const Tensor* float_init(const ir::Graph& g, int v) {
  auto it = g.initializers.find(v);
  return it != g.initializers.end() && it->second.dtype() == DType::Float32 ? &it->second : nullptr;
}

// The M per-channel values of the constant operand of `node` (an `op`, Add
// or Mul, of x and a float32 initializer) when it broadcasts over x, an
// output of `rank` dims whose axis 1 holds the M channels, without changing
// x's shape: [M], [M,1,...] or [1,M,1,...] right-aligned to axis 1, or one
// value for all (rank at most 1). nullopt otherwise.
inline std::optional<std::vector<float>> channel_constant(const ir::Graph& g, const ir::Node& node, const char* op,
                                                          int x, int64_t M, int rank) {
  if (node.op_type != op || !node.domain.empty() || node.inputs.size() != 2 || node.outputs.size() != 1)
    return std::nullopt;
  if (node.inputs[0] != x && node.inputs[1] != x) return std::nullopt;
  const int other = node.inputs[0] == x ? node.inputs[1] : node.inputs[0];
  const Tensor* c = float_init(g, other);
  if (!c || c->rank() > rank) return std::nullopt;
  if (c->numel() == 1 && c->rank() <= 1) return std::vector<float>(size_t(M), c->to_f32()[0]);
  if (c->numel() != M) return std::nullopt;
  // The channel must be axis 1 of the output once right-aligned.
  const int axis = rank - c->rank();
  for (int d = 0; d < c->rank(); ++d)
    if (c->dim(d) != (axis + d == 1 ? M : 1)) return std::nullopt;
  return c->to_f32();
}

}  // namespace kestrel::passes

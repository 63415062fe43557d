// One layer of SAM's ViT-Det image encoder as exported by PyTorch, found by
// its topology (names are never read). The residual stream is a grid of
// tokens, channels last [batch, height, width, channels]:
//
//   x -> LayerNorm [-> Pad -> window partition] -> fused QKV projection ->
//     heads -> scaled scores + decomposed relative-position bias (two Einsums
//     of the unscaled query with gathered tables) -> Softmax -> context ->
//     output projection [-> window unpartition -> crop] -> + x = h
//   h -> LayerNorm -> fc1 -> activation -> fc2 -> + h
//
// The attention between the QKV and output projections is the region of
// nodes the QKV projection feeds on the way to the output projection; from
// it the walk reads the heads, the scale and the two tables. The fused
// node's first-run check against those very nodes confirms the reading
// (including how the tables are indexed).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "families/encoder_layer.h"

namespace kestrel::families {

struct ViTDetLayer {
  int input = -1, output = -1;
  LayerNormParams norm1;
  Tensor w_qkv, b_qkv;   // [D, 3D], [3D]
  Tensor w_out, b_out;   // [D, D], [D]
  MlpBlock mlp;
  int64_t heads = 0, head_dim = 0;
  int64_t window = 0;    // window side; 0: global attention
  float scale = 0;
  Tensor rel_h, rel_w;   // [2 * rows - 1, head_dim], [2 * cols - 1, head_dim]
  std::vector<int> nodes;
};

std::optional<ViTDetLayer> match_vitdet_layer(const GraphIndex& gi, int x, std::string& why);

// Parses an Einsum equation of the decomposed relative-position bias:
// "bhwc,hkc->bhwk" (along the height: 'h') or "bhwc,wkc->bhwk" (along the
// width: 'w'), with any letters; 0 when it is neither.
char relative_position_axis(const std::string& equation);

}  // namespace kestrel::families

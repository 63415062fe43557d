// One encoder layer of the rotary-embedding text family (ModernBERT):
//
//   x -> [LayerNorm] -> fused QKV projection -> heads -> RoPE on q and k ->
//     scaled scores + padding / sliding-window mask -> Softmax -> context ->
//     output projection -> + x = h
//   h -> LayerNorm -> fc1 (2F wide) -> act(first half) * second half -> fc2 -> + h
//
// The attention between the QKV and output projections is found as the
// nodes fed by the QKV projection that lead to the output projection; from
// them the walk reads the head split, the scale, the rotary frequencies and
// the mask (which graph input, which window). The fused node's first-run
// check against those very nodes confirms the reading.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "families/encoder_layer.h"

namespace kestrel::families {

struct RopeLayer {
  int input = -1, output = -1;
  LayerNormParams norm1;  // scale undefined: no attention norm (ModernBERT's first layer)
  LayerNormParams norm2;
  Tensor w_qkv, b_qkv;            // [D, 3D] (query, key, value column blocks), [3D] or undefined
  Tensor w_out, b_out;            // [D, D], [D] or undefined
  Tensor w_fc1, b_fc1;            // [D, 2F]: act(first F) * (second F)
  Tensor w_fc2, b_fc2;            // [F, D]
  Activation act = Activation::GeluErf;
  int64_t heads = 0, head_dim = 0;
  float scale = 0;
  std::vector<float> inv_freq;    // head_dim / 2 rotary frequencies
  int64_t window = -1;            // keys with |query - key| <= window; -1: every key
  float masked_score = 0;         // what a masked score becomes (-inf, or the float minimum)
  int mask_input = -1;            // the graph input holding the padding mask; -1: none
  std::vector<int> nodes;
};

std::optional<RopeLayer> match_rope_layer(const GraphIndex& gi, int x, std::string& why);

}  // namespace kestrel::families

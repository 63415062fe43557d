// The fused rotary-embedding text encoder node (com.kestrel RopeEncoder, the
// ModernBERT family): its inputs and the typed spec in its attributes.
//
// Inputs: the residual stream x [batch, tokens, width], the padding mask
// [batch, tokens] (input 1; -1 when there is none), the other values the
// replaced nodes read from outside (`side_inputs` counts these and the
// mask), then per layer the slots of families.h's LayerSlot (the
// fused QKV projection split in three; fc1 is 2F wide: act(first F) times
// the second F); an absent optional (no attention norm in the first layer,
// no bias) is input -1.
#pragma once
#include <string>
#include <vector>

#include "families/families.h"
#include "ir/graph.h"

namespace kestrel::families {

inline constexpr const char* kRopeEncoderOp = "RopeEncoder";

struct RopeSpec {
  int64_t layers = 0, heads = 0, head_dim = 0, side_inputs = 0;
  std::vector<float> epsilons;   // two per layer
  std::vector<float> scales;     // per layer
  std::vector<int64_t> windows;  // per layer: keys within |q - k| <= window; -1: all
  std::vector<float> masked_scores;  // per layer
  std::vector<float> inv_freq;   // per layer, head_dim / 2 each
  std::vector<int64_t> taps;
  ops::Activation activation = ops::Activation::None;  // the MLP's

  static RopeSpec of(const ir::Node& n) {
    RopeSpec s;
    s.layers = n.attr_i("layers", 0);
    s.heads = n.attr_i("heads", 0);
    s.head_dim = n.attr_i("head_dim", 0);
    s.side_inputs = n.attr_i("side_inputs", 0);
    s.epsilons = n.attr_floats("epsilons");
    s.scales = n.attr_floats("scales");
    s.windows = n.attr_ints("windows");
    s.masked_scores = n.attr_floats("masked_scores");
    s.inv_freq = n.attr_floats("inv_freq");
    s.taps = n.attr_ints("taps");
    s.activation = mlp_activation(n);
    const int64_t L = s.layers;
    if (L <= 0 || s.heads <= 0 || s.head_dim <= 1 || s.head_dim % 2 ||
        int64_t(n.inputs.size()) != 1 + s.side_inputs + L * kSlotsPerLayer ||
        int64_t(s.epsilons.size()) != 2 * L || int64_t(s.scales.size()) != L || int64_t(s.windows.size()) != L ||
        int64_t(s.masked_scores.size()) != L || int64_t(s.inv_freq.size()) != L * s.head_dim / 2 ||
        s.taps.size() != n.outputs.size() || s.side_inputs < 1)
      fail(n.where(), ": inputs and attributes do not describe ", L, " rotary encoder layers");
    return s;
  }
  static constexpr int kMaskInput = 1;
  int input(int64_t layer, int slot) const { return int(1 + side_inputs + layer * kSlotsPerLayer + slot); }
};

// Live tokens per sequence of a right-padding mask [batch, tokens] (a run of
// ones, then zeros); throws an Error naming the row otherwise. The fused
// encoders run each sequence at its own length.
inline std::vector<int64_t> right_padded_lengths(const ir::Node& n, const Tensor& mask, int64_t batch,
                                                 int64_t tokens) {
  if (mask.rank() != 2 || mask.dim(0) != batch || mask.dim(1) != tokens)
    fail(n.where(), ": attention mask ", shape_str(mask.shape()), " does not match ", batch, " sequences of ", tokens,
         " tokens");
  std::vector<float> m = mask.to_f32();
  std::vector<int64_t> live(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len = 0;
    while (len < tokens && m[size_t(b * tokens + len)] == 1.f) ++len;
    for (int64_t t = len; t < tokens; ++t)
      if (m[size_t(b * tokens + t)] != 0.f)
        fail(n.where(), ": attention mask row ", b, " is not right padding (ones, then zeros): token ", t, " is ",
             m[size_t(b * tokens + t)], " after a padded one at ", len,
             "; the fused encoder runs each sequence at its own length and needs right-padded batches");
    live[size_t(b)] = len;
  }
  return live;
}

}  // namespace kestrel::families

// The fused rotary-embedding text encoder node (com.kestrel RopeEncoder, the
// ModernBERT family): its inputs and the typed spec in its attributes.
//
// Inputs: the residual stream x [batch, tokens, width], then `side_inputs`
// graph inputs the replaced nodes read (the padding mask is the one at
// `mask_input`), then per layer the slots below; an absent optional (no
// attention norm in the first layer, no bias) is input -1.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kestrel::families {

inline constexpr const char* kRopeEncoderOp = "RopeEncoder";

enum RopeSlot {
  kRNorm1Scale, kRNorm1Bias, kRQkvWeight, kRQkvBias, kROutWeight, kROutBias,
  kRNorm2Scale, kRNorm2Bias, kRFc1Weight, kRFc1Bias, kRFc2Weight, kRFc2Bias,
  kRopeSlotsPerLayer
};
static_assert(kRFc2Weight == 10, "backends/flops.cpp reads the MLP width from this slot");

struct RopeSpec {
  int64_t layers = 0, heads = 0, head_dim = 0, side_inputs = 0;
  int mask_input = -1;           // node input index of the padding mask, -1: none
  std::vector<float> epsilons;   // two per layer
  std::vector<float> scales;     // per layer
  std::vector<int64_t> windows;  // per layer: keys within |q - k| <= window; -1: all
  std::vector<float> masked_scores;  // per layer
  std::vector<float> inv_freq;   // per layer, head_dim / 2 each
  std::vector<int64_t> taps;
  std::string activation;

  static RopeSpec of(const ir::Node& n) {
    RopeSpec s;
    s.layers = n.attr_i("layers", 0);
    s.heads = n.attr_i("heads", 0);
    s.head_dim = n.attr_i("head_dim", 0);
    s.side_inputs = n.attr_i("side_inputs", 0);
    s.mask_input = int(n.attr_i("mask_input", -1));
    s.epsilons = n.attr_floats("epsilons");
    s.scales = n.attr_floats("scales");
    s.windows = n.attr_ints("windows");
    s.masked_scores = n.attr_floats("masked_scores");
    s.inv_freq = n.attr_floats("inv_freq");
    s.taps = n.attr_ints("taps");
    s.activation = n.attr_s("activation", "");
    const int64_t L = s.layers;
    if (L <= 0 || s.heads <= 0 || s.head_dim <= 1 || s.head_dim % 2 ||
        int64_t(n.inputs.size()) != 1 + s.side_inputs + L * kRopeSlotsPerLayer ||
        int64_t(s.epsilons.size()) != 2 * L || int64_t(s.scales.size()) != L || int64_t(s.windows.size()) != L ||
        int64_t(s.masked_scores.size()) != L || int64_t(s.inv_freq.size()) != L * s.head_dim / 2 ||
        s.taps.size() != n.outputs.size() || s.mask_input > s.side_inputs)
      fail(n.where(), ": inputs and attributes do not describe ", L, " rotary encoder layers");
    return s;
  }
  int input(int64_t layer, int slot) const { return int(1 + side_inputs + layer * kRopeSlotsPerLayer + slot); }
};

}  // namespace kestrel::families

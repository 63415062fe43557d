// The fused encoder node's typed spec, read back from its attributes (the
// claim pass writes them; every backend's kernel reads them this way).
#pragma once
#include <string>
#include <vector>

#include "families/families.h"
#include "ir/graph.h"

namespace kestrel::families {

struct EncoderSpec {
  int64_t layers = 0, heads = 0, head_dim = 0;
  bool pre_norm = false;
  float pre_norm_epsilon = 1e-5f;
  std::vector<float> epsilons;  // two per layer
  std::vector<float> scales;    // attention scale per layer
  std::vector<int64_t> taps;    // layers whose outputs are the node's outputs, in order
  ops::Activation activation = ops::Activation::None;  // the MLP's
  int64_t side_inputs = 1;      // inputs between x and the parameters: the mask slot, then values the original ops read
  int pre_norm_input = 2;       // the pre-encoder LayerNorm's scale (its bias follows)
  int first_layer_input = 2;    // input index of layer 0's first slot

  // Reads and checks the node (throws an Error naming it when inconsistent).
  static EncoderSpec of(const ir::Node& n) {
    EncoderSpec s;
    s.layers = n.attr_i("layers", 0);
    s.heads = n.attr_i("heads", 0);
    s.head_dim = n.attr_i("head_dim", 0);
    s.pre_norm = n.attr_i("pre_norm", 0) != 0;
    s.pre_norm_epsilon = n.attr_f("pre_norm_epsilon", 1e-5f);
    s.epsilons = n.attr_floats("epsilons");
    s.scales = n.attr_floats("scales");
    s.taps = n.attr_ints("taps");
    s.activation = mlp_activation(n);
    s.side_inputs = n.attr_i("side_inputs", 1);
    s.pre_norm_input = int(1 + s.side_inputs);
    s.first_layer_input = s.pre_norm_input + (s.pre_norm ? 2 : 0);
    if (s.layers <= 0 || s.heads <= 0 || s.head_dim <= 0 || s.side_inputs < 1 ||
        int64_t(n.inputs.size()) != s.first_layer_input + s.layers * kSlotsPerLayer ||
        int64_t(s.epsilons.size()) != 2 * s.layers || int64_t(s.scales.size()) != s.layers ||
        s.taps.size() != n.outputs.size())
      fail(n.where(), ": inputs and attributes do not describe ", s.layers, " encoder layers");
    return s;
  }
  // Input 1 is the key padding mask [batch, tokens] (keys where it is 0 are
  // left out; -1: none); the other side inputs (values computed outside that
  // the original ops read) follow it, then the pre-encoder LayerNorm's scale
  // and bias (with pre_norm), then each layer's slots.
  static constexpr int kMaskInput = 1;
  // Input index of a layer's slot.
  int input(int64_t layer, int slot) const { return int(first_layer_input + layer * kSlotsPerLayer + slot); }
};

}  // namespace kestrel::families

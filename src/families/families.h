// Transformer families recognized by topology. A recognized encoder (a
// chain of encoder layers with its family's discriminators) becomes one
// fused node, com.kestrel TransformerEncoder, carrying a typed spec in its
// attributes, packed weights as inputs, and the nodes it replaced as the
// subgraph "original". Its kernels check the fused result against that
// subgraph on the first run of each input shape and withdraw the claim,
// with a warning, if they disagree: a wrong claim cannot corrupt output.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/activation.h"

namespace kestrel::families {

inline constexpr const char* kDomain = "com.kestrel";
inline constexpr const char* kEncoderOp = "TransformerEncoder";

// What one fused node holds, for reports.
struct FamilyClaim {
  std::string family;  // clip, siglip, dinov2, depth_anything, sam, modernbert
  std::string node;    // the fused node's name
  int64_t layers = 0, width = 0, heads = 0, head_dim = 0, mlp_width = 0;
  std::string activation;
  bool pre_norm = false, layer_scale = false, class_token = false;
  int64_t registers = 0;
  std::vector<int64_t> taps;  // layers whose outputs leave the node, in output order
  std::vector<int64_t> windows;  // rotary encoders: per layer, the sliding window's half width (-1: global)
  std::vector<std::string> attention;  // per layer: "global", "sliding +-4", "windows of 14" (empty: all global)
  std::string after;  // what follows the encoder and runs outside it (SAM's neck), for reports
  size_t replaced_nodes = 0;
};

// An encoder-like stack that no family took: the node it starts at, and why.
struct Unclaimed {
  std::string node;
  std::string why;
  std::string text() const { return "node '" + node + "': " + why; }
  bool operator==(const Unclaimed& o) const { return node == o.node && why == o.why; }
};

struct ClaimReport {
  std::vector<FamilyClaim> claims;
  std::vector<Unclaimed> unclaimed;
  void note(const std::string& node, const std::string& why) {
    Unclaimed u{node, why};
    for (const Unclaimed& had : unclaimed)
      if (had == u) return;
    unclaimed.push_back(std::move(u));
  }
};

// The MLP activation a fused node carries (an ops::Activation in the int
// attribute "activation"); throws an Error naming the node otherwise.
inline ops::Activation mlp_activation(const ir::Node& n) {
  const int64_t a = n.attr_i("activation", -1);
  if (a <= 0 || a >= ops::kActivationCount) fail(n.where(), ": attribute activation holds no activation (", a, ")");
  return ops::Activation(a);
}

// What claiming may do (runtime::Config builds it from the session's
// options and the environment).
struct ClaimOptions {
  bool enabled = true;        // false: every encoder runs op by op (KESTREL_FAMILIES=off)
  int64_t encoder_heads = 0;  // the head count of a vision encoder whose graph does not show it; 0: none given
  // A text encoder with a padding mask computes its live tokens only: its
  // outputs at padded tokens read zero instead of what the graph computes
  // there (EncoderSchedule::padding_free).
  bool padding_free = false;
};

// Replaces every recognized encoder in g by its fused node. Runs after the
// default passes.
ClaimReport claim_families(ir::Graph& g, const ClaimOptions& opts = {});

}  // namespace kestrel::families

namespace kestrel::families {

// The fused encoder's inputs: the residual stream x, a key padding mask
// (TransformerEncoder; -1 when none), then (with pre_norm=1) the
// pre-encoder LayerNorm's scale and bias, then per layer these slots
// (weights [in, out]; a LayerScale is folded into the projection before it).
// An absent optional (a bias-less LayerNorm) is input -1.
enum LayerSlot {
  kNorm1Scale, kNorm1Bias, kQWeight, kKWeight, kVWeight, kQBias, kKBias, kVBias, kOutWeight, kOutBias,
  kNorm2Scale, kNorm2Bias, kFc1Weight, kFc1Bias, kFc2Weight, kFc2Bias,
  kSlotsPerLayer
};
static_assert(kFc1Weight == 12 && kFc2Weight == 14, "backends/flops.cpp reads the MLP width from these slots");

}  // namespace kestrel::families

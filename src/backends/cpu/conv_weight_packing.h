// The CPU backend's own rewrite of the graph it compiles (its fast kernels
// only, like residual_fusion.h): the weights of each float32 Conv the direct
// convolution may take (direct_conv.h: windows wider than 1x1, not
// depthwise) packed once, at load, into the order its register tiles read
// them, and handed to the Conv as one more input; packed on every run they
// cost more than the convolution itself on small maps (UltraFace's heads:
// 256 channels in, 4x5 out).
//
//   y = Conv(x, w, b [, r]) -> y = Conv(x, w, b, r, packed(w)) with
//        kPackedWeightsAttr = 4 (absent optional inputs stay empty)
//
// Only where w is an initializer: weights computed at run time are packed by
// the kernel on each run. w stays an input, for the shape checks and the
// other paths. QLinearConv and ConvInteger get their packed product's weights
// the same way (qconv_weights.h): two inputs after their last, rows then row
// sums, the attribute naming the first.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace kestrel::backends::cpu {

// The attribute naming the Conv's input that holds its packed weights.
constexpr const char* kPackedWeightsAttr = "kestrel.packed_weights";

// Returns how many convolutions were given packed weights.
int pack_conv_weights(ir::Graph& g);

// Hands n its packed weights (each a name and an initializer) as inputs
// after its first `slots` (absent optional ones empty), kPackedWeightsAttr
// naming the first: the way every packing rewrite of the CPU backend
// (this one, qmatmul_weight_packing.h) gives them.
void hand_packed_inputs(ir::Graph& g, ir::Node& n, size_t slots, std::vector<std::pair<std::string, Tensor>> packed);

}  // namespace kestrel::backends::cpu

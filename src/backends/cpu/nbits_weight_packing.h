// The CPU backend's rewrite of the graph it compiles, beside
// conv_weight_packing.h: each com.microsoft MatMulNBits whose packed
// weights, scales and zero points are initializers gets its weights
// dequantized once, at load, as W [K, N] in float (ops/matmul_nbits.h, the
// reference's own dequantization), handed to the node as one more input
// after its last (kPackedWeightsAttr naming it). Its kernel
// (backends/cpu/matmul_nbits.cpp) then only multiplies, where the reference
// dequantizes every block on every run. The weights take float32's memory
// while the model runs; the file keeps them in 2 to 8 bits.
#pragma once
#include "ir/graph.h"

namespace kestrel::backends::cpu {

// Returns how many nodes were given dequantized weights.
int pack_nbits_weights(ir::Graph& g);

}  // namespace kestrel::backends::cpu

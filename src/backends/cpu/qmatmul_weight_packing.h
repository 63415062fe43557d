// The CPU backend's rewrite of the graph it compiles, beside
// conv_weight_packing.h: the B of each QLinearMatMul, MatMulInteger,
// DynamicQuantizeMatMul and MatMulIntegerToFloat whose B is an 8-bit matrix
// initializer packed once, at load, into the panels its integer product reads
// (qgemm_panels.h), and handed to the node as two inputs after its last
// (panels, then column sums), the node's kPackedWeightsAttr naming the
// first. Only where that product runs (qgemm_available(): AVX2 or more); B
// stays an input, for the shape checks and the other paths.
#pragma once
#include "ir/graph.h"

namespace kestrel::backends::cpu {

// Returns how many nodes were given packed weights.
int pack_qmatmul_weights(ir::Graph& g);

}  // namespace kestrel::backends::cpu

// The CPU backend's own rewrite of the graph it compiles (its fast kernels
// only; the reference kernels run the graph as given): a residual Add after a
// Conv, and the activation after that Add, run inside the Conv, on each block
// of output while it is in cache, instead of as two more passes over memory
// (BlazeFace's blocks: depthwise, 1x1, + x, Relu).
//
//   y = Conv(x, w, b); z = Add(y, r) [; a = Relu(z)]
//     -> a = Conv(x, w, b, r) with kResidualAttr = 3 [and the activation
//        as its epilogue, ops/epilogue.h], where it runs the Add stood
//
// Only where the Add adds two float32 tensors of the same shape (no
// broadcast), y has no other reader, and the Conv has no activation of its
// own (act(y) + r is not act(y + r)).
#pragma once
#include "ir/graph.h"

namespace kestrel::backends::cpu {

// The attribute naming the Conv's input that holds the residual.
constexpr const char* kResidualAttr = "kestrel.residual_input";

// Returns how many Adds were fused.
int fuse_residual_adds(ir::Graph& g);

}  // namespace kestrel::backends::cpu

// The CPU backend's layout pass: chains of float 2-D convolutions run
// channels-last ([N, H, W, C]) on oneDNN's kernels (conv_channels_last.cpp),
// the tensors between them never reordered, as ONNX Runtime keeps its
// convolution chains in a channel-blocked layout. Alone, a planar kernel is
// level with ONNX Runtime's; inside a model its blocked chain ran depthwise
// and small dense layers 2x to 3x faster (BENCHMARKS.md).
//
//   a = Conv(x); b = Relu(a); c = Conv(b); d = Add(c, b); e = Resize(d)
//     -> x' = Transpose(x, 0 2 3 1); a' = ConvChannelsLast(x');
//        b' = Relu(a'); c' = ConvChannelsLast(b'); d' = Add(c', b');
//        d = Transpose(d', 0 3 1 2); e = Resize(d)
//
// Members: Conv with a constant 4-D float32 weight (its fused residual and
// activation kept; not a 1x1 layer adding a residual of a ragged channel
// count, which the planar kernel does better); elementwise ops whose tensor inputs are all
// channels-last members' outputs (or constant scalars: a rank-4 broadcast
// reads the same under one permutation of both sides); Concat along the
// channels; Resize (its scales or sizes permuted); MaxPool
// (MaxPoolChannelsLast, ops/pool.cpp). A value leaves
// the layout through one Transpose where anything
// else reads it or the graph returns it. Only chains of two or more
// convolutions change: one alone would pay two reorders for one layer.
#pragma once
#include "ir/graph.h"

namespace kestrel::backends::cpu {

// Whether this CPU runs oneDNN's channels-last kernels (x86-64 with AVX2 at
// the level the kernels use; arm64 keeps the planar NEON kernels).
bool channels_last_suits_cpu();

// Rewrites g's convolution chains; returns how many Convs it moved.
int channels_last_chains(ir::Graph& g);

}  // namespace kestrel::backends::cpu

// Depthwise convolution: one input channel per output channel, 1-D or 2-D,
// with its rows read as contiguous (or strided) runs: the CPU backend's fast
// Conv (conv.cpp) for depthwise layers.
#pragma once
#include "ops/conv_util.h"
#include "ops/epilogue.h"

namespace kestrel::backends::cpu {

using ops::Window2D;
using ops::WindowGeom;

// What the output rows get once their sums are final: a fused residual Add
// (the output plane's own, OH x OW; null: none), then a fused activation
// (null: none). Applied to each block of rows while it is in cache.
struct DepthwiseFinish {
  const float* residual = nullptr;
  const ops::Epilogue* epi = nullptr;
};

// One output plane y (OH x OW) from one input plane x (H x W) and its KH x KW
// filter w, starting from `bias`, then finished as `f` says.
void depthwise_plane(const WindowGeom& g, const float* x, const float* w, float bias, float* y,
                     const DepthwiseFinish& f = {});

}  // namespace kestrel::backends::cpu

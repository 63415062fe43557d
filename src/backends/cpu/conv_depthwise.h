// Depthwise convolution: one input channel per output channel, 1-D or 2-D,
// with its rows read as contiguous (or strided) runs: the CPU backend's fast
// Conv (conv.cpp) for depthwise layers.
#pragma once
#include "ops/conv_util.h"

namespace kestrel::backends::cpu {

using ops::Window2D;
using ops::WindowGeom;

// One output plane y (OH x OW) from one input plane x (H x W) and its KH x KW
// filter w, starting from `bias`.
void depthwise_plane(const WindowGeom& g, const float* x, const float* w, float bias, float* y);

}  // namespace kestrel::backends::cpu

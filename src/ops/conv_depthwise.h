// Depthwise convolution: one input channel per output channel, 1-D or 2-D.
#pragma once
#include "ops/conv_util.h"

namespace kestrel::ops {

// One output plane y (OH x OW) from one input plane x (H x W) and its KH x KW
// filter w, starting from `bias`.
void depthwise_plane(const WindowGeom& g, const float* x, const float* w, float bias, float* y);

}  // namespace kestrel::ops

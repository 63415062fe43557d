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

// The same from a plane of 8-bit data less its zero point (x - zp, exact in
// float), converted a row at a time as the kernel copies the plane into its
// padded buffer, from bias 0: QLinearConv's depthwise layers. False, with
// nothing done, where the window is not the blocked kernels' (2-D,
// undilated, column stride 1 or 2): the caller converts the plane first.
bool depthwise_plane_bytes(const WindowGeom& g, const uint8_t* x, int32_t zp, const float* w, float* y);
bool depthwise_plane_bytes(const WindowGeom& g, const int8_t* x, int32_t zp, const float* w, float* y);

}  // namespace kestrel::backends::cpu

// com.microsoft QLinearGlobalAveragePool's geometry and multiplier, which
// every backend's kernel takes from here: the output shape (spatial dims
// 1), the image size summed, and x_scale / (y_scale * image), in float as
// ONNX Runtime computes it.
#pragma once
#include "ops/qlinear_params.h"

namespace kestrel::ops {

struct QGlobalPool {
  Shape out;
  int64_t N = 0, C = 0, image = 1;
  float multiplier = 0;
};

// "" and g set, or what is wrong with x's shape.
inline std::string plan_qlinear_global_pool(const Shape& x, bool channels_last, QParam xp, QParam yp, QGlobalPool& g) {
  if (x.size() < 3) return "X must have rank 3 or more, got " + shape_str(x);
  g.out = x;
  g.image = 1;
  const size_t first = channels_last ? 1 : 2, end = first + (x.size() - 2);
  for (size_t d = first; d < end; ++d) g.image *= x[d], g.out[d] = 1;
  if (g.image >= (int64_t(1) << 23))
    return "an image of " + std::to_string(g.image) + " values is past the int32 sum of 8-bit values";
  g.N = x[0];
  g.C = channels_last ? x.back() : x[1];
  g.multiplier = xp.scale / (yp.scale * float(g.image));
  return "";
}

}  // namespace kestrel::ops

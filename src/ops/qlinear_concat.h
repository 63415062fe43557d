// com.microsoft QLinearConcat's geometry, which every backend's kernel takes
// from here: its inputs' count (Y_scale, Y_zero_point, then a triple
// X, X_scale, X_zero_point per input), the axis and the output's shape.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"

namespace kestrel::ops {

// Tensors concatenated by a node of `inputs` inputs: "" and `count` set, or
// what is wrong.
inline std::string qlinear_concat_count(int inputs, int& count) {
  if (inputs < 5 || (inputs - 2) % 3 != 0)
    return "inputs must be Y_scale, Y_zero_point and (X, X_scale, X_zero_point) per input, got " +
           std::to_string(inputs);
  count = (inputs - 2) / 3;
  return "";
}

// The output shape of `shapes` (of type `type`, each listed in `types`)
// concatenated along `axis_attr`: "" and `out` and `axis` set, or what is wrong.
inline std::string plan_qlinear_concat(const std::vector<Shape>& shapes, const std::vector<DType>& types, DType type,
                                       int64_t axis_attr, Shape& out, int& axis) {
  const Shape& first = shapes[0];
  const int rank = int(first.size());
  if (rank == 0) return "inputs must have rank 1 or more";
  if (axis_attr < -rank || axis_attr >= rank)
    return "axis " + std::to_string(axis_attr) + " is out of range for rank " + std::to_string(rank);
  axis = int(axis_attr < 0 ? axis_attr + rank : axis_attr);
  out = first;
  out[size_t(axis)] = 0;
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (types[k] != type)
      return "input " + std::to_string(k) + " is " + dtype_name(types[k]) + ", not " + dtype_name(type);
    bool fits = shapes[k].size() == first.size();
    for (int d = 0; fits && d < rank; ++d) fits = d == axis || shapes[k][size_t(d)] == first[size_t(d)];
    if (!fits)
      return "input " + std::to_string(k) + " " + shape_str(shapes[k]) + " does not match " + shape_str(first) +
             " off axis " + std::to_string(axis);
    out[size_t(axis)] += shapes[k][size_t(axis)];
  }
  return "";
}

}  // namespace kestrel::ops

// The tables of com.microsoft QLinearSigmoid and QLinearLeakyRelu
// (qlinear_params.h: each of the 256 byte values dequantized, through the
// function, quantized), the function applied as ONNX Runtime applies it:
// the logistic of its CPU provider (logistic.h), v >= 0 ? v : alpha * v.
// Every backend's kernels map bytes through them.
#pragma once
#include "ops/logistic.h"
#include "ops/qlinear_params.h"

namespace kestrel::ops {

inline std::array<uint8_t, 256> qlinear_sigmoid_table(DType type, QParam x, QParam y) {
  return qlinear_table(type, x, y, [](const float* in, float* out) { logistic(in, out, 256); });
}

inline std::array<uint8_t, 256> qlinear_leaky_relu_table(DType type, QParam x, QParam y, float alpha) {
  return qlinear_table(type, x, y, [alpha](const float* in, float* out) {
    for (int i = 0; i < 256; ++i) out[i] = in[i] >= 0.0f ? in[i] : alpha * in[i];
  });
}

}  // namespace kestrel::ops

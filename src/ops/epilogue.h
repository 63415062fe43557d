// An activation fused into the op before it (Conv, Gemm, MatMul), applied to
// each block of output while it is still in cache. The fusion pass
// (passes/fuse_activation.cpp) records it on the node as two attributes;
// kernels that honour them call Epilogue::of(node).apply(...) on their output.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include "ir/graph.h"

namespace kestrel::ops {

constexpr const char* kEpilogueAttr = "kestrel.activation";        // string: Relu, Clip, ...
constexpr const char* kEpilogueParamsAttr = "kestrel.activation_params";  // floats

struct Epilogue {
  // Silu is x * Sigmoid(x) and MulHardSigmoid x * HardSigmoid(x) (two ONNX
  // nodes each); the others are one ONNX op of the same name.
  enum class Kind { None, Relu, Clip, LeakyRelu, HardSigmoid, Sigmoid, HardSwish, Silu, MulHardSigmoid, Gelu, GeluTanh };
  Kind kind = Kind::None;
  float a = 0, b = 0;  // Clip: min, max. LeakyRelu: alpha. (Mul)HardSigmoid: alpha, beta.

  static Kind kind_of(const std::string& op) {
    if (op == "Relu") return Kind::Relu;
    if (op == "Clip") return Kind::Clip;
    if (op == "LeakyRelu") return Kind::LeakyRelu;
    if (op == "HardSigmoid") return Kind::HardSigmoid;
    if (op == "Sigmoid") return Kind::Sigmoid;
    if (op == "HardSwish") return Kind::HardSwish;
    if (op == "Silu") return Kind::Silu;
    if (op == "MulHardSigmoid") return Kind::MulHardSigmoid;
    if (op == "Gelu") return Kind::Gelu;
    if (op == "GeluTanh") return Kind::GeluTanh;
    return Kind::None;
  }

  static Epilogue of(const ir::Node& n) {
    Epilogue e;
    const ir::Attribute* k = n.attr(kEpilogueAttr);
    if (!k) return e;
    e.kind = kind_of(k->s);
    std::vector<float> p = n.attr_floats(kEpilogueParamsAttr);
    if (p.size() > 0) e.a = p[0];
    if (p.size() > 1) e.b = p[1];
    return e;
  }

  // NaN passes through every kind, as in the unfused ops.
  void apply(float* y, int64_t n) const {
    switch (kind) {
      case Kind::None: return;
      case Kind::Relu:
        for (int64_t i = 0; i < n; ++i) y[i] = y[i] < 0 ? 0 : y[i];
        return;
      case Kind::Clip:
        for (int64_t i = 0; i < n; ++i) y[i] = y[i] < a ? a : (y[i] > b ? b : y[i]);
        return;
      case Kind::LeakyRelu:
        for (int64_t i = 0; i < n; ++i) y[i] = y[i] < 0 ? y[i] * a : y[i];
        return;
      case Kind::HardSigmoid:
        for (int64_t i = 0; i < n; ++i) {
          float v = a * y[i] + b;
          y[i] = v < 0 ? 0 : (v > 1 ? 1 : v);
        }
        return;
      case Kind::Sigmoid:
        for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-y[i]));
        return;
      case Kind::HardSwish:
        for (int64_t i = 0; i < n; ++i) y[i] = y[i] * std::clamp(y[i] / 6.0f + 0.5f, 0.0f, 1.0f);
        return;
      case Kind::Silu:
        for (int64_t i = 0; i < n; ++i) y[i] = y[i] * (1.0f / (1.0f + std::exp(-y[i])));
        return;
      case Kind::MulHardSigmoid:
        for (int64_t i = 0; i < n; ++i) {
          float v = a * y[i] + b;
          y[i] = y[i] * (v < 0 ? 0 : (v > 1 ? 1 : v));
        }
        return;
      case Kind::Gelu:
        for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * y[i] * (1.0f + std::erf(y[i] * 0.70710678118654752f));
        return;
      case Kind::GeluTanh:
        for (int64_t i = 0; i < n; ++i)
          y[i] = 0.5f * y[i] * (1.0f + std::tanh(0.79788456080286536f * (y[i] + 0.044715f * y[i] * y[i] * y[i])));
        return;
    }
  }
};

}  // namespace kestrel::ops

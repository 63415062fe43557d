// The one list of pointwise activations Kestrel fuses into the op before
// them: a Conv, Gemm or MatMul epilogue (passes/fuse_activation.cpp) and a
// fused encoder's MLP (families/). The matchers name what they found with
// it, the nodes carry it as an int attribute, and both backends read it;
// names exist only for reports.
//
// The scalar function here is the reference every kernel is checked against.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kestrel::ops {

// Silu is x * Sigmoid(x) and MulHardSigmoid x * HardSigmoid(x) (two ONNX
// nodes each); QuickGelu is x * Sigmoid(1.702 x) (CLIP's MLP);
// Relu6HardSwish is x * Clip(x + 3, 0, 6) / 6, hard swish as Paddle2ONNX
// writes it (Add, Clip, Mul and Div nodes), rounded as those nodes round.
enum class Activation : int32_t {
  None, Relu, Clip, LeakyRelu, HardSigmoid, Sigmoid, HardSwish, Silu, MulHardSigmoid, GeluErf, GeluTanh, QuickGelu,
  Relu6HardSwish,
};
inline constexpr int32_t kActivationCount = int32_t(Activation::Relu6HardSwish) + 1;

// "gelu", "gelu_tanh", "relu", ... (reports and inspect).
const char* activation_name(Activation a);

// The activation an ONNX op of one node computes (Relu, Clip, LeakyRelu,
// HardSigmoid, Sigmoid, HardSwish; Gelu is read with its attribute by the
// fusion pass); None for any other op.
Activation activation_of_op(const char* op_type);

// act(x) with its parameters a, b (Clip: min, max; LeakyRelu: alpha;
// (Mul)HardSigmoid: alpha, beta). NaN passes through every kind, as in the
// unfused ops.
inline float activate(Activation act, float a, float b, float x) {
  switch (act) {
    case Activation::None: return x;
    case Activation::Relu: return x < 0 ? 0 : x;
    case Activation::Clip: return x < a ? a : (x > b ? b : x);
    case Activation::LeakyRelu: return x < 0 ? x * a : x;
    case Activation::HardSigmoid: {
      const float v = a * x + b;
      return v < 0 ? 0 : (v > 1 ? 1 : v);
    }
    case Activation::Sigmoid: return 1.0f / (1.0f + std::exp(-x));
    case Activation::HardSwish: return x * std::clamp(x / 6.0f + 0.5f, 0.0f, 1.0f);
    case Activation::Silu: return x * (1.0f / (1.0f + std::exp(-x)));
    case Activation::MulHardSigmoid: {
      const float v = a * x + b;
      return x * (v < 0 ? 0 : (v > 1 ? 1 : v));
    }
    case Activation::GeluErf: return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case Activation::GeluTanh: return 0.5f * x * (1.0f + std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case Activation::QuickGelu: return x / (1.0f + std::exp(-1.702f * x));
    case Activation::Relu6HardSwish: {
      const float v = x + 3.0f;
      return (x * (v < 0 ? 0.0f : (v > 6 ? 6.0f : v))) / 6.0f;
    }
  }
  return x;
}

// y[i] = activate(kind, a, b, y[i]) over a block, vectorized at the CPU's
// level (activation_apply.cpp); Sigmoid and Silu with the Sigmoid op's
// logistic (ops/logistic.h), as the unfused nodes compute them.
void apply_activation(Activation kind, float a, float b, float* y, int64_t n);
// y[i] = the same of x[i] + *bias (null: none) + residual[i] (null: none),
// in one pass where the activation allows (a fused Conv's or Gemm's
// epilogue); x may be y.
void finish_activation(Activation kind, float a, float b, const float* bias, const float* residual, const float* x,
                       float* y, int64_t n);

}  // namespace kestrel::ops

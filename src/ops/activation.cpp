#include "ops/activation.h"

#include <cstring>

namespace kestrel::ops {

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::None: return "none";
    case Activation::Relu: return "relu";
    case Activation::Clip: return "clip";
    case Activation::LeakyRelu: return "leaky_relu";
    case Activation::HardSigmoid: return "hard_sigmoid";
    case Activation::Sigmoid: return "sigmoid";
    case Activation::HardSwish: return "hard_swish";
    case Activation::Silu: return "silu";
    case Activation::MulHardSigmoid: return "mul_hard_sigmoid";
    case Activation::GeluErf: return "gelu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::QuickGelu: return "quick_gelu";
    case Activation::Relu6HardSwish: return "hard_swish_relu6";
  }
  return "?";
}

Activation activation_of_op(const char* op) {
  struct Entry {
    const char* op;
    Activation act;
  };
  static constexpr Entry kOps[] = {{"Relu", Activation::Relu},           {"Clip", Activation::Clip},
                                   {"LeakyRelu", Activation::LeakyRelu}, {"HardSigmoid", Activation::HardSigmoid},
                                   {"Sigmoid", Activation::Sigmoid},     {"HardSwish", Activation::HardSwish}};
  for (const Entry& e : kOps)
    if (std::strcmp(e.op, op) == 0) return e.act;
  return Activation::None;
}

}  // namespace kestrel::ops

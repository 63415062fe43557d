#include "backends/vulkan/ops/util.h"
#include "ops/epilogue.h"

namespace kestrel::vulkan {

ActParams shader_activation(ops::Activation act, float a, float b) {
  using A = ops::Activation;
  switch (act) {
    case A::None: return {};
    case A::Relu: return {UnaryFn::Relu};
    case A::Clip: return {UnaryFn::Clip, a, b};
    case A::LeakyRelu: return {UnaryFn::LeakyRelu, a};
    case A::HardSigmoid: return {UnaryFn::HardSigmoid, a, b};
    case A::Sigmoid: return {UnaryFn::Sigmoid};
    case A::HardSwish: return {UnaryFn::HardSwish};
    case A::Silu: return {UnaryFn::Silu};
    case A::MulHardSigmoid: return {UnaryFn::MulHardSigmoid, a, b};
    case A::GeluErf: return {UnaryFn::Gelu};
    case A::GeluTanh: return {UnaryFn::GeluTanh};
    case A::QuickGelu: return {UnaryFn::SigmoidScaled, 1.702f, 0};  // x * sigmoid(1.702 x)
    case A::Relu6HardSwish: return {UnaryFn::Relu6HardSwish};
  }
  return {};
}

ActParams fused_activation(const ir::Node& n) {
  const ops::Epilogue e = ops::Epilogue::of(n);
  return shader_activation(e.kind, e.a, e.b);
}

}  // namespace kestrel::vulkan

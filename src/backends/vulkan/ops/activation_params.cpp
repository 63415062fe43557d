#include "backends/vulkan/ops/util.h"
#include "ops/epilogue.h"

namespace kestrel::vulkan {

ActParams fused_activation(const ir::Node& n) {
  ops::Epilogue e = ops::Epilogue::of(n);
  using K = ops::Epilogue::Kind;
  switch (e.kind) {
    case K::None: return {};
    case K::Relu: return {Act::Relu};
    case K::Clip: return {Act::Clip, e.a, e.b};
    case K::LeakyRelu: return {Act::LeakyRelu, e.a};
    case K::HardSigmoid: return {Act::HardSigmoid, e.a, e.b};
    case K::Sigmoid: return {Act::Sigmoid};
    case K::HardSwish: return {Act::HardSwish};
    case K::Silu: return {Act::Silu};
    case K::MulHardSigmoid: return {Act::MulHardSigmoid, e.a, e.b};
    case K::Gelu: return {Act::Gelu};
    case K::GeluTanh: return {Act::GeluTanh};
  }
  return {};
}

}  // namespace kestrel::vulkan

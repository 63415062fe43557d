// An activation fused into the op before it (Conv, Gemm, MatMul), applied to
// each block of output while it is still in cache. The fusion pass
// (passes/fuse_activation.cpp) records it on the node as two attributes;
// kernels that honour them call Epilogue::of(node).apply(...) on their output.
#pragma once
#include <type_traits>
#include <vector>

#include "ir/graph.h"
#include "ops/activation.h"
#include "ops/logistic.h"

namespace kestrel::ops {

constexpr const char* kEpilogueAttr = "kestrel.activation";               // int: an ops::Activation
constexpr const char* kEpilogueParamsAttr = "kestrel.activation_params";  // floats: a, b

struct Epilogue {
  Activation kind = Activation::None;
  float a = 0, b = 0;  // see activate()

  // Throws an Error naming the node when the attribute holds no activation.
  static Epilogue of(const ir::Node& n) {
    Epilogue e;
    const ir::Attribute* k = n.attr(kEpilogueAttr);
    if (!k) return e;
    if (k->kind != ir::Attribute::Kind::Int || k->i < 0 || k->i >= kActivationCount)
      fail(n.where(), ": attribute ", kEpilogueAttr, " is not an activation number (0 to ", kActivationCount - 1, ")");
    e.kind = Activation(k->i);
    std::vector<float> p = n.attr_floats(kEpilogueParamsAttr);
    if (p.size() > 0) e.a = p[0];
    if (p.size() > 1) e.b = p[1];
    return e;
  }

  // One loop per kind, so each inlines its function (the switch stays out of
  // the loop). Sigmoid and Silu take the logistic as the Sigmoid op computes
  // it (ops/logistic.h: ONNX Runtime's approximation, vectorized), so a fused
  // Silu gives the bits of the Sigmoid and Mul it replaces, at a fraction of
  // the cost of a call to exp per value.
  void apply(float* y, int64_t n) const {
    if (kind == Activation::Sigmoid) return logistic(y, y, n);
    if (kind == Activation::Silu) {
      float s[256];
      for (int64_t i = 0; i < n; i += 256) {
        const int64_t m = n - i < 256 ? n - i : 256;
        logistic(y + i, s, m);
        for (int64_t j = 0; j < m; ++j) y[i + j] *= s[j];
      }
      return;
    }
    auto each = [&](auto k) {
      for (int64_t i = 0; i < n; ++i) y[i] = activate(decltype(k)::value, a, b, y[i]);
    };
    switch (kind) {
      case Activation::None: return;
      case Activation::Relu: return each(Kind<Activation::Relu>{});
      case Activation::Clip: return each(Kind<Activation::Clip>{});
      case Activation::LeakyRelu: return each(Kind<Activation::LeakyRelu>{});
      case Activation::HardSigmoid: return each(Kind<Activation::HardSigmoid>{});
      case Activation::Sigmoid: return each(Kind<Activation::Sigmoid>{});
      case Activation::HardSwish: return each(Kind<Activation::HardSwish>{});
      case Activation::Silu: return each(Kind<Activation::Silu>{});
      case Activation::MulHardSigmoid: return each(Kind<Activation::MulHardSigmoid>{});
      case Activation::GeluErf: return each(Kind<Activation::GeluErf>{});
      case Activation::GeluTanh: return each(Kind<Activation::GeluTanh>{});
      case Activation::QuickGelu: return each(Kind<Activation::QuickGelu>{});
    }
  }

 private:
  template <Activation A>
  using Kind = std::integral_constant<Activation, A>;
};

}  // namespace kestrel::ops

// An activation fused into the op before it (Conv, Gemm, MatMul), applied to
// each block of output while it is still in cache. The fusion pass
// (passes/fuse_activation.cpp) records it on the node as two attributes;
// kernels that honour them call Epilogue::of(node).apply(...) on their output.
#pragma once
#include <vector>

#include "ir/graph.h"
#include "ops/activation.h"

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

  // (ops/activation.h: a fused Silu gives the bits of the Sigmoid and Mul it
  // replaces.)
  void apply(float* y, int64_t n) const { apply_activation(kind, a, b, y, n); }
  // y + *bias (null: none) + residual (null: none), then the activation, in
  // that rounding order (the Conv's bias, the Add it absorbed, the
  // activation node), vectorized at the CPU's level; from `x` into y where
  // x is given.
  void finish(float* y, int64_t n, const float* bias, const float* residual, const float* x = nullptr) const {
    finish_activation(kind, a, b, bias, residual, x ? x : y, y, n);
  }
};

}  // namespace kestrel::ops

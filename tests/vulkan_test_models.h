// Small models the Vulkan tests share, built in memory.
#pragma once
#include <onnx/onnx_pb.h>

#include <string>

#include "core/tensor.h"
#include "runtime/session.h"
#include "onnx_builders.h"

namespace kestrel::test {

// x[n,n] -> MatMul(W0) -> ... -> MatMul(W{k-1}): k dense products, each 2n^3
// FLOPs, long enough on lavapipe that a wait of a millisecond gives up while
// the device is still writing.
inline std::string matmul_chain(int64_t n, int k) {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  g->set_name("matmul_chain");
  add_input(g, "x", {n, n});
  std::string prev = "x";
  for (int i = 0; i < k; ++i) {
    auto* w = add_float_initializer(g, "w" + std::to_string(i), {n, n});
    // Entries of +-1/n keep every product's values near the input's.
    for (int64_t j = 0; j < n * n; ++j) w->set_float_data(int(j), ((j * 7 + i) % 5 - 2) * 0.5f / float(n));
    std::string next = "y" + std::to_string(i);
    add_node(g, "MatMul", {prev, w->name()}, {next}, "mm" + std::to_string(i));
    prev = next;
  }
  add_output(g, prev);
  return bytes_of(m);
}

// Its input: values in [-1, 1].
inline Tensor matmul_chain_input(int64_t n) {
  Tensor t(DType::Float32, {n, n});
  for (int64_t i = 0; i < n * n; ++i) t.data<float>()[i] = float(i % 13) / 6.0f - 1.0f;
  return t;
}

// x[1,n] -> Relu -> Add(bias) -> Sigmoid, and a branch Neg(x) -> Mul with it:
// five GPU nodes, one of which (Mul) waits for two producers.
inline std::string chain_model(int64_t n, bool with_topk = false) {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  g->set_name("chain");
  add_input(g, "x", {1, n});
  auto* b = add_float_initializer(g, "bias", {n});
  for (int64_t i = 0; i < n; ++i) b->set_float_data(int(i), float(i % 7) * 0.25f - 0.5f);
  auto node = [&](const char* op, std::vector<std::string> ins, const char* out) {
    return add_node(g, op, ins, {out}, std::string(op) + "_" + out);
  };
  node("Relu", {"x"}, "r");
  node("Add", {"r", "bias"}, "a");
  node("Sigmoid", {"a"}, "s");
  node("Neg", {"x"}, "ng");
  node("Mul", {"s", "ng"}, "y");
  const char* out = "y";
  if (with_topk) {  // TopK has no Vulkan kernel: it must run on the CPU, with that reason
    add_int64_initializer(g, "k", {3});
    auto* t = node("TopK", {"y", "k"}, "top");
    t->add_output("top_i");
    out = "top";
  }
  add_output(g, out);
  return bytes_of(m);
}

// Its input: a ramp in [-2, 2].
inline Tensor ramp(int64_t n) {
  Tensor t(DType::Float32, {1, n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = float(i % 101) / 25.0f - 2.0f;
  return t;
}

// A Vulkan session in `precision` ("fp32", "fp16", "auto") on `threads` host threads.
inline std::unique_ptr<Session> vulkan_session(const std::string& bytes, const std::string& precision = "fp32",
                                               int threads = 1) {
  SessionOptions o;
  o.backend = BackendChoice::Vulkan;
  o.precision = parse_precision(precision);
  o.threads = threads;
  return Session::load_bytes(bytes.data(), bytes.size(), o);
}

}  // namespace kestrel::test

// Identifies an MLP's activation by what it computes, not by which ops an
// exporter chose (x*sigmoid(1.702x), 0.5x(1+erf(x/sqrt2)), Gelu(approximate)
// and the tanh form all appear in the wild, in several orders).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "families/encoder_layer.h"
#include "ops/evaluate.h"

namespace kestrel::families {

namespace {

const std::set<std::string> kPointwise = {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Neg", "Erf", "Tanh",
                                          "Sigmoid", "Relu", "Gelu", "Exp", "Reciprocal", "Identity"};

}  // namespace

std::optional<Activation> identify_activation(const GraphIndex& gi, int from, int to, std::vector<int>& nodes,
                                              std::string& why) {
  // The nodes between `from` and `to`: walk back from `to` to `from`.
  std::set<int> found;
  std::vector<int> stack{to};
  while (!stack.empty()) {
    int v = stack.back();
    stack.pop_back();
    if (v == from) continue;
    int p = gi.producer_index(v);
    if (p < 0) {
      if (gi.constant(v)) continue;
      why = "the activation reads a value other than the fc1 output";
      return std::nullopt;
    }
    if (found.count(p)) continue;
    const ir::Node& n = gi.node(p);
    if (!n.domain.empty() || !kPointwise.count(n.op_type)) {
      why = "the activation contains " + n.op_type + ", not a pointwise op";
      return std::nullopt;
    }
    if (found.size() > 16) {
      why = "the activation is longer than any known form";
      return std::nullopt;
    }
    found.insert(p);
    for (int in : n.inputs)
      if (in >= 0) {
        if (const Tensor* c = gi.constant(in); c && c->numel() != 1) {
          why = "the activation reads a non-scalar constant";
          return std::nullopt;
        }
        stack.push_back(in);
      }
  }
  if (found.empty()) {
    why = "no activation between fc1 and fc2";
    return std::nullopt;
  }
  // Nothing outside may read the activation's inner values.
  for (int p : found)
    for (int v : gi.node(p).outputs) {
      if (v < 0 || v == to) continue;
      if (gi.escapes(v)) {
        why = "an activation value is read outside the layer";
        return std::nullopt;
      }
      for (int r : gi.readers(v))
        if (!found.count(r)) {
          why = "an activation value is read outside the layer";
          return std::nullopt;
        }
    }
  // Evaluate on probe values, in graph order.
  std::vector<float> probe;
  for (int i = -60; i <= 60; ++i) probe.push_back(float(i) / 10);
  std::map<int, Tensor> env{{from, Tensor::from_f32({int64_t(probe.size())}, probe)}};
  try {
    for (int p : found) {  // std::set iterates in index order, which is topological
      const ir::Node& n = gi.node(p);
      std::vector<Tensor> in;
      for (int v : n.inputs) {
        if (v < 0) {
          in.emplace_back();
        } else if (const Tensor* c = gi.constant(v)) {
          in.push_back(*c);
        } else {
          in.push_back(env.at(v));
        }
      }
      std::vector<Tensor> out = ops::evaluate_node(n, in);
      for (size_t k = 0; k < out.size() && k < n.outputs.size(); ++k)
        if (n.outputs[k] >= 0) env[n.outputs[k]] = out[k];
    }
  } catch (const std::exception& e) {
    why = std::string("evaluating the activation failed: ") + e.what();
    return std::nullopt;
  }
  auto it = env.find(to);
  if (it == env.end() || it->second.numel() != int64_t(probe.size())) {
    why = "the activation does not keep its input's shape";
    return std::nullopt;
  }
  std::vector<float> got = it->second.to_f32();
  for (Activation a : {Activation::GeluErf, Activation::GeluTanh, Activation::QuickGelu, Activation::Silu,
                       Activation::Relu}) {
    double worst = 0;
    for (size_t i = 0; i < probe.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - ops::activate(a, 0, 0, probe[i])));
    // float32 evaluation of any form stays within ~1e-6 of its function (so
    // does the reference, in float32 too); the closest two candidates (GELU
    // erf and tanh) differ by 2e-4 here.
    if (worst < 2e-5) {
      nodes.insert(nodes.end(), found.begin(), found.end());
      return a;
    }
  }
  why = "the activation is none of GELU (erf or tanh), quick-GELU, SiLU or ReLU";
  return std::nullopt;
}

}  // namespace kestrel::families

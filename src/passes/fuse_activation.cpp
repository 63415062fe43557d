// Folds an activation into the Conv, Gemm or MatMul that feeds it, so the
// activation runs on each output block while it is in cache (CPU) or in
// registers (GPU) instead of as a second pass over memory:
//   - one-op activations: Relu, Clip with constant bounds, LeakyRelu,
//     HardSigmoid, Sigmoid, HardSwish, Gelu;
//   - two-op ones: x * Sigmoid(x) (SiLU) and x * HardSigmoid(x);
//   - four-op hard swish as Paddle2ONNX writes it: Div(Mul(x, Clip(Add(x, 3),
//     0, 6)), 6).
// Only when no one else reads the intermediate values.
#include <array>
#include <optional>
#include <set>

#include "ops/epilogue.h"
#include "passes/graph_uses.h"
#include "passes/passes.h"

namespace kestrel::passes {
namespace {

struct Fused {
  ops::Activation kind = ops::Activation::None;
  std::vector<float> params;
};

// The activation `act` as an epilogue, or nullopt if it cannot be fused (e.g. Clip bounds not constant).
std::optional<Fused> one_op_activation(const ir::Graph& g, const ir::Node& act) {
  using A = ops::Activation;
  if (act.op_type == "Gelu") {
    std::string approx = act.attr_s("approximate", "none");
    if (approx != "none" && approx != "tanh") return std::nullopt;  // the op reports the error
    return Fused{approx == "tanh" ? A::GeluTanh : A::GeluErf, {}};
  }
  const A kind = ops::activation_of_op(act.op_type.c_str());
  switch (kind) {
    case A::Relu:
    case A::Sigmoid:
    case A::HardSwish:
      return Fused{kind, {}};
    case A::LeakyRelu:
      return Fused{kind, {act.attr_f("alpha", 0.01f)}};
    case A::HardSigmoid:
      return Fused{kind, {act.attr_f("alpha", 0.2f), act.attr_f("beta", 0.5f)}};
    case A::Clip: {
      if (act.opset < 11)
        return Fused{kind, {act.attr_f("min", -3.4028234663852886e38f), act.attr_f("max", 3.4028234663852886e38f)}};
      float bound[2] = {-INFINITY, INFINITY};
      for (size_t i = 1; i < act.inputs.size() && i < 3; ++i) {
        if (act.inputs[i] < 0) continue;
        auto it = g.initializers.find(act.inputs[i]);
        if (it == g.initializers.end() || it->second.numel() != 1 || it->second.dtype() != DType::Float32)
          return std::nullopt;
        bound[i - 1] = it->second.to_f32()[0];
      }
      return Fused{kind, {bound[0], bound[1]}};
    }
    default:
      return std::nullopt;
  }
}

// Conv always computes in float; Gemm and MatMul only carry an epilogue when
// their output is known to be float32 (their integer kernels have none).
bool can_carry(const ir::Graph& g, const ir::Node& n) {
  if (!n.domain.empty() || n.has(ops::kEpilogueAttr) || n.outputs.size() != 1 || n.outputs[0] < 0) return false;
  if (n.op_type == "Conv") return true;
  if (n.op_type == "Gemm" || n.op_type == "MatMul") return g.values[size_t(n.outputs[0])].dtype == DType::Float32;
  return false;
}

void set_epilogue(ir::Node& n, const Fused& f) {
  ir::Attribute kind;
  kind.kind = ir::Attribute::Kind::Int;
  kind.i = int64_t(f.kind);
  n.attrs[ops::kEpilogueAttr] = kind;
  ir::Attribute pa;
  pa.kind = ir::Attribute::Kind::Floats;
  pa.floats = f.params;
  n.attrs[ops::kEpilogueParamsAttr] = pa;
}

// Mul(x, gate(x)) with gate Sigmoid or HardSigmoid: returns the gate node's
// index and the fused form, when x feeds exactly the gate and the Mul.
std::optional<std::pair<int, Fused>> gated(const ir::Graph& g, const GraphUses& uses, const ir::Node& mul) {
  if (mul.op_type != "Mul" || !mul.domain.empty() || mul.inputs.size() != 2 || mul.outputs.size() != 1) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    int x = mul.inputs[size_t(side)], s = mul.inputs[size_t(1 - side)];
    if (x < 0 || s < 0) continue;
    int gi = uses.producer(s);
    if (gi < 0) continue;
    const ir::Node& gate = g.nodes[size_t(gi)];
    if (!gate.domain.empty() || gate.inputs.empty() || gate.inputs[0] != x) continue;
    if (!uses.private_to_one_reader(s) || uses.readers(x) != 2 || !uses.only_node_inputs_read(x)) continue;
    if (gate.op_type == "Sigmoid") return std::make_pair(gi, Fused{ops::Activation::Silu, {}});
    if (gate.op_type == "HardSigmoid")
      return std::make_pair(gi, Fused{ops::Activation::MulHardSigmoid, {gate.attr_f("alpha", 0.2f), gate.attr_f("beta", 0.5f)}});
  }
  return std::nullopt;
}

// Whether v is a constant float32 scalar (or one-element rank-1 tensor,
// which broadcasts without changing a shape) equal to `want`.
bool constant_is(const ir::Graph& g, int v, float want) {
  if (v < 0) return false;
  auto it = g.initializers.find(v);
  return it != g.initializers.end() && it->second.dtype() == DType::Float32 && it->second.numel() == 1 &&
         it->second.rank() <= 1 && it->second.to_f32()[0] == want;
}

// The other input of a two-input node, when one of its inputs is `v`; -1 if not.
int other_input(const ir::Node& n, int v) {
  if (n.inputs.size() != 2) return -1;
  return n.inputs[0] == v ? n.inputs[1] : n.inputs[1] == v ? n.inputs[0] : -1;
}

// Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6), the operands of Add and Mul in
// either order, each intermediate read once: the nodes Add, Clip and Mul and
// the value x, or nullopt.
struct HardSwishNodes {
  std::array<int, 3> nodes;
  int x;
};
std::optional<HardSwishNodes> relu6_hard_swish(const ir::Graph& g, const GraphUses& uses, const ir::Node& div) {
  const auto node_of = [&](int v, const char* op) -> int {
    const int p = v < 0 ? -1 : uses.producer(v);
    if (p < 0 || g.nodes[size_t(p)].op_type != op || !g.nodes[size_t(p)].domain.empty() ||
        g.nodes[size_t(p)].outputs.size() != 1 || !uses.private_to_one_reader(v))
      return -1;
    return p;
  };
  if (div.op_type != "Div" || div.inputs.size() != 2 || !constant_is(g, div.inputs[1], 6.0f)) return std::nullopt;
  const int mi = node_of(div.inputs[0], "Mul");
  if (mi < 0) return std::nullopt;
  const ir::Node& mul = g.nodes[size_t(mi)];
  for (int side = 0; side < 2 && mul.inputs.size() == 2; ++side) {
    const int x = mul.inputs[size_t(side)], ci = node_of(mul.inputs[size_t(1 - side)], "Clip");
    if (x < 0 || ci < 0 || uses.readers(x) != 2 || !uses.only_node_inputs_read(x)) continue;
    const ir::Node& clip = g.nodes[size_t(ci)];
    const std::optional<Fused> bounds = one_op_activation(g, clip);
    if (!bounds || bounds->params != std::vector<float>{0.0f, 6.0f}) continue;
    const int ai = node_of(clip.inputs[0], "Add");
    if (ai < 0 || !constant_is(g, other_input(g.nodes[size_t(ai)], x), 3.0f)) continue;
    return HardSwishNodes{{ai, ci, mi}, x};
  }
  return std::nullopt;
}

}  // namespace

int fuse_activations(ir::Graph& g, bool only_into_quantizers) {
  GraphUses uses(g);
  std::vector<bool> removed(g.nodes.size(), false);
  // Values a QuantizeLinear reads (only_into_quantizers).
  std::set<int> quantized;
  for (const ir::Node& n : g.nodes)
    if (n.op_type == "QuantizeLinear" && n.domain.empty() && !n.inputs.empty()) quantized.insert(n.inputs[0]);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& act = g.nodes[i];
    if (!act.domain.empty() || act.inputs.empty() || act.outputs.size() != 1) continue;
    if (only_into_quantizers && (!quantized.count(act.outputs[0]) || !uses.private_to_one_reader(act.outputs[0])))
      continue;
    if (auto hs = relu6_hard_swish(g, uses, act)) {
      const int p = uses.producer(hs->x);
      bool free = p >= 0 && !removed[size_t(p)] && can_carry(g, g.nodes[size_t(p)]);
      for (int k : hs->nodes) free = free && !removed[size_t(k)];
      if (!free || (only_into_quantizers && g.nodes[size_t(p)].op_type != "Conv")) continue;
      set_epilogue(g.nodes[size_t(p)], Fused{ops::Activation::Relu6HardSwish, {}});
      g.nodes[size_t(p)].outputs[0] = act.outputs[0];
      for (int k : hs->nodes) removed[size_t(k)] = true;
      removed[i] = true;
      ++fused;
      continue;
    }
    if (auto gm = gated(g, uses, act)) {
      int x = g.nodes[size_t(gm->first)].inputs[0];
      int p = uses.producer(x);
      if (p < 0 || removed[size_t(p)] || removed[size_t(gm->first)] || !can_carry(g, g.nodes[size_t(p)])) continue;
      if (only_into_quantizers && g.nodes[size_t(p)].op_type != "Conv") continue;
      set_epilogue(g.nodes[size_t(p)], gm->second);
      g.nodes[size_t(p)].outputs[0] = act.outputs[0];
      removed[size_t(gm->first)] = removed[i] = true;
      ++fused;
      continue;
    }
    int x = act.inputs[0];
    if (x < 0) continue;
    int p = uses.producer(x);
    if (p < 0 || removed[size_t(p)] || !can_carry(g, g.nodes[size_t(p)]) || !uses.private_to_one_reader(x)) continue;
    if (only_into_quantizers && g.nodes[size_t(p)].op_type != "Conv") continue;
    auto f = one_op_activation(g, act);
    if (!f) continue;
    set_epilogue(g.nodes[size_t(p)], *f);
    g.nodes[size_t(p)].outputs[0] = act.outputs[0];
    removed[i] = true;
    ++fused;
  }
  erase_nodes(g, removed);
  return fused;
}

}  // namespace kestrel::passes

// Element-wise ops: odd sizes, size-1 and broadcast dims, and one tensor past
// 65535 workgroups of 256.
#include "harness.h"

namespace kestrel::backend_ops {
namespace {

std::vector<OpCase> unary_cases() {
  std::vector<OpCase> v;
  struct U {
    const char* op;
    float lo, hi;
  };
  for (U u : {U{"Relu", -2, 2}, U{"Sigmoid", -8, 8}, U{"Tanh", -4, 4}, U{"Exp", -4, 4}, U{"Log", 0.01f, 8},
              U{"Sqrt", 0, 9}, U{"Abs", -3, 3}, U{"Neg", -3, 3}, U{"Reciprocal", 0.5f, 4}, U{"Floor", -5, 5},
              U{"Ceil", -5, 5}, U{"Erf", -3, 3}, U{"Sin", -3, 3}, U{"Cos", -3, 3}, U{"Softplus", -5, 5},
              U{"Softsign", -5, 5}, U{"HardSwish", -5, 5}, U{"Sign", -2, 2}, U{"Mish", -4, 4},
              // Inverse trigonometry inside its domain; Tan short of its poles at +-pi/2.
              U{"Asin", -0.99f, 0.99f}, U{"Acos", -0.99f, 0.99f}, U{"Atan", -5, 5}, U{"Tan", -1.4f, 1.4f},
              U{"Round", -5, 5}})
    v.push_back({.label = std::string(u.op) + " [3,5,7]", .op = u.op, .opset = std::string(u.op) == "Mish" ? 18 : 17,
                 .inputs = {rnd("x", {3, 5, 7}, u.lo, u.hi)}});
  v.push_back({.label = "LeakyRelu alpha 0.2 [2,3,17]", .op = "LeakyRelu", .inputs = {rnd("x", {2, 3, 17})},
               .attrs = [](onnx::NodeProto& n) { attr_f(n, "alpha", 0.2f); }});
  v.push_back({.label = "HardSigmoid a=1/6 b=0.5", .op = "HardSigmoid", .inputs = {rnd("x", {1, 16, 9, 9}, -6, 6)},
               .attrs = [](onnx::NodeProto& n) { attr_f(n, "alpha", 1.0f / 6); attr_f(n, "beta", 0.5f); }});
  v.push_back({.label = "Elu [4,33]", .op = "Elu", .inputs = {rnd("x", {4, 33}, -3, 3)}});
  v.push_back({.label = "Celu alpha 0.5 [4,33]", .op = "Celu", .opset = 12, .inputs = {rnd("x", {4, 33}, -3, 3)},
               .attrs = [](onnx::NodeProto& n) { attr_f(n, "alpha", 0.5f); }});
  v.push_back({.label = "ThresholdedRelu alpha 0.3 [4,33]", .op = "ThresholdedRelu", .opset = 10,
               .inputs = {rnd("x", {4, 33}, -2, 2)}, .attrs = [](onnx::NodeProto& n) { attr_f(n, "alpha", 0.3f); }});
  v.push_back({.label = "Selu [4,33]", .op = "Selu", .inputs = {rnd("x", {4, 33}, -3, 3)}});
  v.push_back({.label = "Gelu erf [2,77]", .op = "Gelu", .opset = 20, .inputs = {rnd("x", {2, 77}, -4, 4)}});
  v.push_back({.label = "Gelu tanh [2,77]", .op = "Gelu", .opset = 20, .inputs = {rnd("x", {2, 77}, -4, 4)},
               .attrs = [](onnx::NodeProto& n) { attr_s(n, "approximate", "tanh"); }});
  v.push_back({.label = "Clip min/max inputs", .op = "Clip", .opset = 13,
               .inputs = {rnd("x", {1, 8, 13, 13}, -8, 8), floats("lo", {0.f}), floats("hi", {6.f})}});
  v.push_back({.label = "Clip max only", .op = "Clip", .opset = 13,
               .inputs = {rnd("x", {5, 11}, -8, 8), absent(), floats("hi", {1.5f})}});
  v.push_back({.label = "Clip opset 7 attrs", .op = "Clip", .opset = 7, .inputs = {rnd("x", {5, 11}, -8, 8)},
               .attrs = [](onnx::NodeProto& n) { attr_f(n, "min", -1); attr_f(n, "max", 1); }});
  v.push_back({.label = "Identity", .op = "Identity", .inputs = {rnd("x", {3, 1, 5})}});
  for (auto& c : v) {
    // Transcendentals in float16 storage: one rounding of the result.
    c.fp16_nmse = 2e-6;
  }
  return v;
}

std::vector<OpCase> binary_cases() {
  std::vector<OpCase> v;
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    float lo = std::string(op) == "Div" ? 0.5f : -1;
    v.push_back({.label = "same shape [2,3,5,7]", .op = op, .inputs = {rnd("a", {2, 3, 5, 7}), rnd("b", {2, 3, 5, 7}, lo, 2)}});
    v.push_back({.label = "row broadcast [4,1,33]x[17,1]", .op = op, .inputs = {rnd("a", {4, 1, 33}), rnd("b", {17, 1}, lo, 2)}});
    v.push_back({.label = "scalar weight", .op = op, .inputs = {rnd("a", {3, 19}), weight("b", {}, lo, 2)}});
    v.push_back({.label = "channel bias [1,6,9,11]x[6,1,1]", .op = op,
                 .inputs = {rnd("a", {1, 6, 9, 11}), weight("b", {6, 1, 1}, lo, 2)}});
  }
  v.push_back({.label = "Pow integer exponent", .op = "Pow", .inputs = {rnd("a", {7, 9}, -2, 2), floats("b", {3.f})}});
  v.push_back({.label = "Pow fractional", .op = "Pow", .inputs = {rnd("a", {7, 9}, 0.1f, 3), rnd("b", {7, 1}, -2, 2)}});
  v.push_back({.label = "Max 3 inputs broadcast", .op = "Max", .inputs = {rnd("a", {2, 5}), rnd("b", {5}), rnd("c", {2, 1})}});
  v.push_back({.label = "Min 2 inputs", .op = "Min", .inputs = {rnd("a", {4, 6}), rnd("b", {4, 6})}});
  v.push_back({.label = "Sum 3 inputs", .op = "Sum", .inputs = {rnd("a", {3, 4}), rnd("b", {3, 4}), rnd("c", {4})}});
  v.push_back({.label = "PRelu channel slope", .op = "PRelu", .inputs = {rnd("x", {1, 4, 5, 5}), weight("s", {4, 1, 1})}});
  v.push_back({.label = "Mod fmod=1", .op = "Mod", .inputs = {rnd("a", {5, 7}, -9, 9), rnd("b", {5, 7}, 1, 3)},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "fmod", 1); }});
  // 4100 x 4100 = 16.8M elements: 65,664 workgroups of 256.
  v.push_back({.label = "Add past 65535 workgroups [4100,4100]", .op = "Add",
               .inputs = {rnd("a", {4100, 4100}), rnd("b", {4100, 1})}});
  for (auto& c : v) c.fp16_nmse = 2e-6;
  return v;
}

const bool registered = add_cases(unary_cases()) && add_cases(binary_cases());

}  // namespace
}  // namespace kestrel::backend_ops

namespace kestrel::backend_ops {
namespace {

// Comparisons (float in, bool out) and boolean logic, with broadcasting.
// Inputs are multiples of 1/4 so Equal sees exact ties.
std::vector<OpCase> compare_cases() {
  std::vector<OpCase> v;
  auto quarter = [](InputSpec s) {
    std::vector<float> q;
    for (int64_t i = 0; i < shape_numel(s.shape); ++i) q.push_back(float(int(i * 7 % 9) - 4) / 4);
    s.value = Tensor::from_f32(s.shape, q);
    return s;
  };
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    v.push_back({.label = "broadcast [3,1,7]x[5,1]", .op = op, .inputs = {quarter(rnd("a", {3, 1, 7})), quarter(rnd("b", {5, 1}))}});
  auto boolean = [](InputSpec s) { s.dtype = DType::Bool; return s; };
  for (const char* op : {"And", "Or", "Xor"})
    v.push_back({.label = "broadcast [4,9]x[9]", .op = op, .inputs = {boolean(rnd("a", {4, 9})), boolean(rnd("b", {9}))}});
  v.push_back({.label = "Not [6,5]", .op = "Not", .inputs = {boolean(rnd("a", {6, 5}))}});
  return v;
}

const bool registered_compare = add_cases(compare_cases());

}  // namespace
}  // namespace kestrel::backend_ops

#include "harness.h"

namespace kestrel::backend_ops {

InputSpec rnd(const std::string& name, Shape shape, float lo, float hi) {
  InputSpec s;
  s.name = name;
  s.shape = std::move(shape);
  s.lo = lo;
  s.hi = hi;
  return s;
}

InputSpec weight(const std::string& name, Shape shape, float lo, float hi) {
  InputSpec s = rnd(name, std::move(shape), lo, hi);
  s.initializer = true;
  return s;
}

InputSpec ints(const std::string& name, const std::vector<int64_t>& v, bool as_1d) {
  InputSpec s;
  s.name = name;
  s.dtype = DType::Int64;
  s.value = Tensor::from_i64(v);
  if (!as_1d) s.value = s.value.reshaped({});
  s.shape = s.value.shape();
  s.initializer = true;
  return s;
}

InputSpec floats(const std::string& name, const std::vector<float>& v) {
  InputSpec s;
  s.name = name;
  s.value = Tensor::from_f32({int64_t(v.size())}, v);
  s.shape = s.value.shape();
  s.initializer = true;
  return s;
}

InputSpec absent() { return InputSpec{}; }

namespace {
std::vector<OpCase>& registry() {
  static std::vector<OpCase> r;
  return r;
}
}  // namespace

bool add_cases(std::vector<OpCase> cases) {
  for (auto& c : cases) registry().push_back(std::move(c));
  return true;
}

const std::vector<OpCase>& all_cases() { return registry(); }

void attr_i(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void attr_f(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void attr_s(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void attr_floats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}

}  // namespace kestrel::backend_ops

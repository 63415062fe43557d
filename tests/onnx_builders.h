// Builders for small ONNX models made in memory with ONNX's protobuf classes,
// so a test holds exactly the graph (or the one defect) it is about, and the
// helpers that load such a model expecting Kestrel to refuse it.
#pragma once
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "runtime/session.h"

namespace kestrel::test {

constexpr int kFloat = onnx::TensorProto::FLOAT;

// An empty model importing the default domain at `opset`; the graph is named "g".
inline onnx::ModelProto make_model(int opset = 13, int64_t ir_version = 8) {
  onnx::ModelProto m;
  m.set_ir_version(ir_version);
  m.set_producer_name("kestrel-tests");
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

// One dim of a declared shape: a size, or a symbol such as "batch". The int
// constructor keeps a literal 0 a size rather than a null symbol.
struct Dim {
  Dim(int n) : size(n) {}
  Dim(int64_t n) : size(n) {}
  Dim(const char* s) : symbol(s) {}
  Dim(std::string s) : symbol(std::move(s)) {}
  int64_t size = 0;
  std::string symbol;  // a symbolic dim when not empty
};

// Names `v` and declares it a tensor of `elem` with shape `dims`.
inline void set_type(onnx::ValueInfoProto* v, const std::string& name, const std::vector<Dim>& dims,
                     int elem = kFloat) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (const Dim& d : dims) {
    auto* dp = shape->add_dim();
    if (d.symbol.empty()) dp->set_dim_value(d.size);
    else dp->set_dim_param(d.symbol);
  }
}

// A graph input of `elem` with shape `dims`.
inline void add_input(onnx::GraphProto* g, const std::string& name, const std::vector<Dim>& dims,
                      int elem = kFloat) {
  set_type(g->add_input(), name, dims, elem);
}

// A graph output by name alone: its type is left to inference.
inline void add_output(onnx::GraphProto* g, const std::string& name) { g->add_output()->set_name(name); }

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& ins,
                                 const std::vector<std::string>& outs, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : ins) n->add_input(i);
  for (const auto& o : outs) n->add_output(o);
  return n;
}

// A float initializer `name` of shape `dims`, every element `fill`.
inline onnx::TensorProto* add_float_initializer(onnx::GraphProto* g, const std::string& name,
                                                const std::vector<int64_t>& dims, float fill = 1.0f) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) t->add_dims(d), n *= d;
  for (int64_t i = 0; i < n; ++i) t->add_float_data(fill);
  return t;
}

// An int64 initializer of rank 1 holding `values` (shapes, axes, indices).
inline onnx::TensorProto* add_int64_initializer(onnx::GraphProto* g, const std::string& name,
                                                const std::vector<int64_t>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(int64_t(values.size()));
  for (int64_t x : values) t->add_int64_data(x);
  return t;
}

// ---- Attributes of one type each ----

inline void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

inline void set_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

inline void set_float(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

inline void set_string(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

// ---- Serializing and loading ----

inline std::string bytes_of(const onnx::ModelProto& m) {
  std::string s;
  EXPECT_TRUE(m.SerializeToString(&s));
  return s;
}

// The Error message of loading these bytes; fails the test if loading
// succeeds. Any exception other than kestrel::Error escapes and fails it too.
inline std::string load_error(const std::string& bytes) {
  try {
    Session::load_bytes(bytes.data(), bytes.size());
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the model loaded, but an Error was expected";
  return "";
}
inline std::string load_error(const onnx::ModelProto& m) { return load_error(bytes_of(m)); }

// The same for a model file at `path`.
inline std::string load_file_error(const std::string& path) {
  try {
    Session::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "'" << path << "' loaded, but an Error was expected";
  return "";
}

}  // namespace kestrel::test

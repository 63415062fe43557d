// Invalid ONNX models, each holding one defect, built with ONNX's protobuf
// classes. ONNX Runtime refuses them at load (ConvTranspose's output_padding
// at the first run), except a repeated initializer and a Constant with two
// values, where it silently takes one. Kestrel must refuse each at load with
// an Error naming the node (name and op), attribute or tensor. The same
// models are stored in tests/fuzz/regressions/ (file name = case name +
// ".onnx"), where the loader fuzzer runs them first every time.
#pragma once
#include <onnx/onnx_pb.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "onnx_builders.h"

namespace kestrel::test {

namespace proto {

// x [1,1,5,5] -> OP (node `name`) -> y, with a [1,1,3,3] weight `w` when the op takes one.
inline onnx::ModelProto window_model(const std::string& op, const std::string& name, onnx::NodeProto** n,
                                     int elem = kFloat) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 5, 5}, elem);
  bool weighted = op == "Conv" || op == "ConvInteger" || op == "ConvTranspose";
  if (weighted) add_input(g, "w", {1, 1, 3, 3}, elem);
  *n = add_node(g, op, weighted ? std::vector<std::string>{"x", "w"} : std::vector<std::string>{"x"}, {"y"}, name);
  if (!weighted) set_ints(*n, "kernel_shape", {3, 3});
  add_output(g, "y");
  return m;
}

inline onnx::ModelProto strides_zero(const std::string& op, int elem = kFloat) {
  onnx::NodeProto* n;
  auto m = window_model(op, "win", &n, elem);
  set_ints(n, "strides", {0, 1});
  return m;
}

// A [1,1,3] sparse float tensor holding one value, 1 at index 0.
inline void sparse_weight(onnx::SparseTensorProto* sv) {
  for (int64_t d : {1, 1, 3}) sv->add_dims(d);
  sv->mutable_values()->set_data_type(kFloat);
  sv->mutable_values()->add_dims(1);
  sv->mutable_values()->add_float_data(1.0f);
  sv->mutable_indices()->set_data_type(onnx::TensorProto::INT64);
  sv->mutable_indices()->add_dims(1);
  sv->mutable_indices()->add_int64_data(0);
}

}  // namespace proto

struct HostileModel {
  std::string name;                         // also the regression file's name, without ".onnx"
  std::function<onnx::ModelProto()> build;
  std::vector<std::string> error_has;       // substrings the load Error must contain
};

// gtest prints a case by its name.
inline void PrintTo(const HostileModel& m, std::ostream* os) { *os << m.name; }

inline std::vector<HostileModel> hostile_models() {
  using namespace proto;
  std::vector<HostileModel> cases;

  // ONNX's own shape inference divides by strides; a zero used to stop the
  // process with SIGFPE before Kestrel's run-time check.
  for (const char* op : {"Conv", "AveragePool", "MaxPool", "LpPool"})
    cases.push_back({std::string(op) + "_strides_zero", [op] { return strides_zero(op); },
                     {"node 'win' (" + std::string(op) + ")", "strides", "positive", "0"}});
  cases.push_back({"ConvInteger_strides_zero", [] { return strides_zero("ConvInteger", onnx::TensorProto::UINT8); },
                   {"node 'win' (ConvInteger)", "strides", "positive"}});
  cases.push_back({"QLinearConv_strides_zero", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     const int u8 = onnx::TensorProto::UINT8;
                     add_input(g, "x", {1, 1, 5, 5}, u8);
                     add_input(g, "w", {1, 1, 3, 3}, u8);
                     for (const char* scale : {"x_scale", "w_scale", "y_scale"}) add_input(g, scale, {});
                     for (const char* zero : {"x_zero", "w_zero", "y_zero"}) add_input(g, zero, {}, u8);
                     auto* n = add_node(g, "QLinearConv", {"x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero"},
                                    {"y"}, "win");
                     set_ints(n, "strides", {0, 1});
                     add_output(g, "y");
                     return m;
                   },
                   {"node 'win' (QLinearConv)", "strides", "positive"}});
  cases.push_back({"Conv_dilations_zero", [] {
                     onnx::NodeProto* n;
                     auto m = window_model("Conv", "win", &n);
                     set_ints(n, "dilations", {1, 0});
                     return m;
                   },
                   {"node 'win' (Conv)", "dilations", "positive"}});
  cases.push_back({"MaxPool_kernel_shape_zero", [] {
                     onnx::NodeProto* n;
                     auto m = window_model("MaxPool", "win", &n);
                     n->mutable_attribute(0)->set_ints(1, 0);
                     return m;
                   },
                   {"node 'win' (MaxPool)", "kernel_shape", "positive"}});
  cases.push_back({"Conv_negative_pads", [] {
                     onnx::NodeProto* n;
                     auto m = window_model("Conv", "win", &n);
                     set_ints(n, "pads", {0, -1, 0, 0});
                     return m;
                   },
                   {"node 'win' (Conv)", "pads", "-1"}});
  cases.push_back({"Conv_strides_length_mismatch", [] {
                     onnx::NodeProto* n;
                     auto m = window_model("Conv", "win", &n);
                     set_ints(n, "strides", {1, 1, 1});
                     return m;
                   },
                   {"node 'win' (Conv)", "strides", "3 values", "2 spatial"}});
  cases.push_back({"ConvTranspose_weight_rank_below_input", [] {
                     // ONNX's inference reads one kernel size per input spatial dim from the
                     // weight's shape: past the end of it here.
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {1, 1, 5, 5});
                     add_input(g, "w", {1, 1, 3});
                     add_node(g, "ConvTranspose", {"x", "w"}, {"y"}, "up");
                     add_output(g, "y");
                     return m;
                   },
                   {"node 'up' (ConvTranspose)", "input 'x' has rank 4 but weight 'w' has rank 3"}});
  // Sparse tensors. ONNX's inference functions take a sparse input's shape as
  // present and then read the dense type's (empty) shape: past its end. The
  // fuzzer found the first by turning the case above's weight sparse.
  cases.push_back({"ConvTranspose_weight_declared_sparse", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {1, 1, 5, 5});
                     auto* w = g->add_input();
                     w->set_name("w");
                     auto* st = w->mutable_type()->mutable_sparse_tensor_type();
                     st->set_elem_type(kFloat);
                     for (int64_t d : {1, 1, 3}) st->mutable_shape()->add_dim()->set_dim_value(d);
                     add_node(g, "ConvTranspose", {"x", "w"}, {"y"}, "up");
                     add_output(g, "y");
                     return m;
                   },
                   {"value 'w'", "sparse tensor", "not support"}});
  cases.push_back({"Constant_sparse_value_into_ConvTranspose", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {1, 1, 5, 5});
                     auto* c = add_node(g, "Constant", {}, {"w"}, "weight");
                     auto* a = c->add_attribute();
                     a->set_name("sparse_value");
                     a->set_type(onnx::AttributeProto::SPARSE_TENSOR);
                     auto* sv = a->mutable_sparse_tensor();
                     sparse_weight(sv);
                     add_node(g, "ConvTranspose", {"x", "w"}, {"y"}, "up");
                     add_output(g, "y");
                     return m;
                   },
                   {"node 'weight' (Constant)", "attribute 'sparse_value' holds a sparse tensor", "not support"}});
  cases.push_back({"sparse_initializer_into_ConvTranspose", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {1, 1, 5, 5});
                     auto* sv = g->add_sparse_initializer();
                     sparse_weight(sv);
                     sv->mutable_values()->set_name("w");
                     add_node(g, "ConvTranspose", {"x", "w"}, {"y"}, "up");
                     add_output(g, "y");
                     return m;
                   },
                   {"sparse initializer 'w'", "does not support sparse tensors"}});
  cases.push_back({"Conv_strides_zero_in_if_branch", [] {
                     // The same division inside a subgraph: inference recurses into If branches.
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "cond", {}, onnx::TensorProto::BOOL);
                     add_input(g, "x", {1, 1, 5, 5});
                     add_float_initializer(g, "w", {1, 1, 3, 3});
                     auto* n = add_node(g, "If", {"cond"}, {"y"}, "branch");
                     auto* then_attr = n->add_attribute();
                     then_attr->set_name("then_branch");
                     then_attr->set_type(onnx::AttributeProto::GRAPH);
                     auto* tg = then_attr->mutable_g();
                     tg->set_name("then");
                     auto* conv = add_node(tg, "Conv", {"x", "w"}, {"t"}, "inner_conv");
                     set_ints(conv, "strides", {0, 1});
                     set_type(tg->add_output(), "t", {1, 1, 3, 5});
                     auto* else_attr = n->add_attribute();
                     else_attr->set_name("else_branch");
                     else_attr->set_type(onnx::AttributeProto::GRAPH);
                     auto* eg = else_attr->mutable_g();
                     eg->set_name("else");
                     add_node(eg, "Identity", {"x"}, {"e"}, "inner_identity");
                     set_type(eg->add_output(), "e", {1, 1, 5, 5});
                     add_output(g, "y");
                     return m;
                   },
                   {"node 'inner_conv' (Conv)", "strides", "positive"}});
  for (const char* op : {"SpaceToDepth", "DepthToSpace"})
    cases.push_back({std::string(op) + "_blocksize_zero", [op] {
                       auto m = make_model();
                       auto* g = m.mutable_graph();
                       add_input(g, "x", {1, 4, 4, 4});
                       set_int(add_node(g, op, {"x"}, {"y"}, "blocks"), "blocksize", 0);
                       add_output(g, "y");
                       return m;
                     },
                     {"node 'blocks' (" + std::string(op) + ")", "blocksize", "positive"}});

  cases.push_back({"Relu_writes_graph_input", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {2, 3});
                     add_node(g, "Relu", {"x"}, {"x"}, "overwrite");
                     add_output(g, "x");
                     return m;
                   },
                   {"node 'overwrite' (Relu)", "'x'", "graph input"}});
  cases.push_back({"Relu_writes_initializer", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {2, 3});
                     add_float_initializer(g, "w", {2, 3});
                     add_node(g, "Relu", {"x"}, {"w"}, "overwrite");
                     add_node(g, "Add", {"x", "w"}, {"y"}, "sum");
                     add_output(g, "y");
                     return m;
                   },
                   {"node 'overwrite' (Relu)", "'w'", "initializer"}});
  cases.push_back({"duplicate_initializer", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {2, 3});
                     add_float_initializer(g, "w", {2, 3}, 1.0f);
                     add_float_initializer(g, "w", {2, 3}, 2.0f);
                     add_node(g, "Add", {"x", "w"}, {"y"}, "sum");
                     add_output(g, "y");
                     return m;
                   },
                   {"initializer 'w'", "twice"}});
  cases.push_back({"duplicate_graph_input", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {2, 3});
                     add_input(g, "x", {4});
                     add_node(g, "Relu", {"x"}, {"y"}, "act");
                     add_output(g, "y");
                     return m;
                   },
                   {"graph input 'x'", "twice"}});
  cases.push_back({"value_produced_twice", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {2, 3});
                     add_node(g, "Relu", {"x"}, {"y"}, "first");
                     add_node(g, "Neg", {"x"}, {"y"}, "second");
                     add_output(g, "y");
                     return m;
                   },
                   {"'y'", "node 'first' (Relu)", "node 'second' (Neg)"}});
  cases.push_back({"Add_four_inputs", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {2, 3});
                     add_node(g, "Add", {"x", "x", "x", "x"}, {"y"}, "sum4");
                     add_output(g, "y");
                     return m;
                   },
                   {"node 'sum4' (Add)", "4 inputs", "opset 13"}});
  cases.push_back({"node_without_outputs", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {2, 3});
                     add_node(g, "Relu", {"x"}, {}, "silent");
                     add_node(g, "Identity", {"x"}, {"y"}, "id");
                     add_output(g, "y");
                     return m;
                   },
                   {"node 'silent' (Relu)", "no outputs"}});
  cases.push_back({"Transpose_perm_float", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {2, 3});
                     set_float(add_node(g, "Transpose", {"x"}, {"y"}, "flip"), "perm", 1.5f);
                     add_output(g, "y");
                     return m;
                   },
                   {"node 'flip' (Transpose)", "attribute 'perm'", "FLOAT", "INTS"}});
  cases.push_back({"Softmax_axis_string", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {2, 3});
                     set_string(add_node(g, "Softmax", {"x"}, {"y"}, "probs"), "axis", "hello");
                     add_output(g, "y");
                     return m;
                   },
                   {"node 'probs' (Softmax)", "attribute 'axis'", "STRING", "INT"}});
  cases.push_back({"GroupNormalization_epsilon_int", [] {
                     // An op newer than the linked libonnx: its attribute types come from Kestrel's table.
                     auto m = make_model(18);
                     auto* g = m.mutable_graph();
                     add_input(g, "x", {1, 2, 2});
                     add_float_initializer(g, "scale", {2});
                     add_float_initializer(g, "bias", {2}, 0.0f);
                     auto* n = add_node(g, "GroupNormalization", {"x", "scale", "bias"}, {"y"}, "norm");
                     set_int(n, "num_groups", 2);
                     set_int(n, "epsilon", 1);
                     add_output(g, "y");
                     return m;
                   },
                   {"node 'norm' (GroupNormalization)", "attribute 'epsilon' is INT", "FLOAT"}});
  cases.push_back({"Constant_two_values", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     auto* n = add_node(g, "Constant", {}, {"y"}, "two");
                     set_float(n, "value_float", 1.0f);
                     set_int(n, "value_int", 2);
                     add_output(g, "y");
                     return m;
                   },
                   {"node 'two' (Constant)", "exactly one", "value_float", "value_int"}});
  cases.push_back({"Constant_no_value", [] {
                     auto m = make_model();
                     auto* g = m.mutable_graph();
                     add_node(g, "Constant", {}, {"y"}, "none");
                     add_output(g, "y");
                     return m;
                   },
                   {"node 'none' (Constant)", "exactly one"}});
  cases.push_back({"AveragePool_pads_not_smaller_than_kernel", [] {
                     onnx::NodeProto* n;
                     auto m = window_model("AveragePool", "avg", &n);
                     set_ints(n, "pads", {3, 0, 0, 0});
                     return m;
                   },
                   {"node 'avg' (AveragePool)", "pads", "smaller than", "kernel"}});
  cases.push_back({"ConvTranspose_output_padding_not_smaller_than_stride", [] {
                     onnx::NodeProto* n;
                     auto m = window_model("ConvTranspose", "up", &n);
                     set_ints(n, "strides", {2, 2});
                     set_ints(n, "output_padding", {0, 2});
                     return m;
                   },
                   {"node 'up' (ConvTranspose)", "output_padding", "stride", "dilation"}});
  return cases;
}

}  // namespace kestrel::test

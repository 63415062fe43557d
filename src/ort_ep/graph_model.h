// ONNX Runtime's view of a graph (OrtGraph, read through its graph API)
// written back as an ONNX model, the form Kestrel loads (onnx_io): the
// nodes, their attributes, the constant initializers they read (copied: the
// OrtGraph is gone once the callback returns), and graph inputs and outputs
// with ONNX Runtime's types and shapes.
#pragma once
#include <onnx/onnx_pb.h>
#include <onnxruntime_c_api.h>

#include <string>
#include <vector>

namespace kestrel::ort_ep {

// Reading ONNX Runtime's graph API.
// The graph's nodes, in the order ONNX Runtime lists them.
std::vector<const OrtNode*> nodes_of(const OrtGraph* graph);
// A node's inputs or outputs (null for an omitted optional one), and the
// values its subgraphs read from this graph.
std::vector<const OrtValueInfo*> node_values(const OrtNode* n, bool outputs);
std::vector<const OrtValueInfo*> implicit_inputs(const OrtNode* n);
std::string name_of(const OrtValueInfo* v);  // "" for null
std::vector<std::string> value_names(const OrtNode* n, bool outputs);
std::string op_of(const OrtNode* n);

// A tensor's element type (ONNX's numbering) and dims.
struct TensorType {
  int32_t element_type = 0;
  std::vector<int64_t> dims;
};
TensorType tensor_type(const OrtValue* value);

// The nodes whose attributes or types an ONNX model cannot carry from here
// (a subgraph attribute, a sequence value, a string tensor): Kestrel does not
// see them at all. Empty `why` for a node that converts.
std::vector<std::string> unconvertible(const std::vector<const OrtNode*>& nodes);

struct GraphModel {
  onnx::ModelProto model;
  // The model's inputs and outputs, in the model's order.
  std::vector<std::string> inputs, outputs;
  // Per node given: its name in the model (ONNX Runtime's, made unique).
  std::vector<std::string> node_names;
};

// Writes `nodes` (a subset of `graph`'s, each convertible) as a model. A
// value read by a kept node and made by none is an initializer when ONNX
// Runtime holds it as a constant, else a graph input. Outputs: the graph's
// own (`graph_outputs`, for a fused subgraph whose outputs ONNX Runtime
// set), else every value a kept node makes that the graph outputs or a node
// outside the set reads.
GraphModel model_of(const OrtGraph* graph, const std::vector<const OrtNode*>& nodes, bool graph_outputs);

// Node name and op for messages: "'name' (Op)".
std::string describe(const OrtNode* node);

}  // namespace kestrel::ort_ep

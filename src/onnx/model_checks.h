// Load-time checks of a parsed ONNX model, run before Kestrel converts it and
// before ONNX's shape inference reads it. Each refuses a model that ONNX
// declares invalid (and ONNX Runtime refuses at load) with one Error naming
// the graph, node (name and op), attribute or tensor; without them such a
// model ran with a silently wrong answer, or stopped the process inside
// ONNX's shape inference.
#pragma once
#include <string>
#include <unordered_map>

#include "onnx/loader.h"

namespace onnx {
class ModelProto;
class GraphProto;
}  // namespace onnx

namespace kestrel::onnx_io {

// Walks the main graph and every subgraph (If/Loop/Scan bodies) at any depth
// and runs all the checks below. Throws kestrel::Error on the first defect.
void check_model(const onnx::ModelProto& mp, const Domains& domains);

// "node 'conv1' (Conv)" for error messages, named as the loader names it.
std::string node_label(const onnx::NodeProto& n, int index);

// Names are single assignment within a graph: inputs and initializers are
// unique, and a node writes neither a graph input, an initializer nor a value
// another node writes. Every node has at least one output.
void check_graph_names(const onnx::GraphProto& g);

// The node against ONNX's schema for its op at the model's opset: input and
// output counts, each attribute's type, required and unknown attributes,
// deprecated ops. Nodes without a schema (custom domains, ops ONNX does not
// define) are left to the check that reports unsupported ops.
void check_node_schema(const onnx::NodeProto& n, const std::string& label, const Domains& domains);

// Attribute values ONNX's shape inference or Kestrel's kernels divide by or
// index with (strides, dilations, kernel_shape, pads, blocksize, ...), and
// the rules ONNX Runtime applies to them. `ranks` gives the declared rank of
// values whose rank the file states (inputs, initializers, value_info),
// enclosing graphs' included.
void check_node_attribute_values(const onnx::NodeProto& n, const std::string& label,
                                 const std::unordered_map<std::string, int>& ranks);

}  // namespace kestrel::onnx_io

// Reads an ONNX file into Kestrel's IR: protobuf parsing with ONNX's own proto
// (libonnx), external data, opset checks, ONNX's shape inference for the
// static shapes, and a validation that reports every unsupported node at once.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "ir/graph.h"

namespace onnx {
class ModelProto;
class TensorProto;
class NodeProto;
}

namespace kestrel::onnx_io {

// IR versions from 3 on are read: later ones mostly add element types, and a
// model is refused only where it uses one (read_type names the value).
constexpr int64_t kMinIrVersion = 3;
constexpr int kMinOpset = 7;
constexpr int kMaxOpset = 21;

using Domains = std::map<std::string, int>;  // domain ("" default) -> imported opset

// "ai.onnx" is another spelling of the default domain "".
std::string canonical_domain(const std::string& domain);
// The node's name, or "<op>_<index>" (its index in its graph) if the file
// gives none: the name Kestrel uses for the node everywhere.
std::string node_name(const onnx::NodeProto& n, int index);

struct Model {
  int64_t ir_version = 0;
  std::string producer;
  std::map<std::string, int> opsets;  // domain ("" default) -> version
  // The model's metadata_props, as the exporter wrote them (Ultralytics
  // writes its class names as "names": "{0: 'person', ...}").
  std::map<std::string, std::string> metadata;
  ir::Graph graph;
};

// Throws kestrel::Error with a one-paragraph reason on any failure.
Model load_model_file(const std::string& path);
// `base_dir` is where external data files are looked up ("" = none allowed).
Model load_model_bytes(const void* data, size_t size, const std::string& base_dir);

// A model already parsed (or built in memory, as the ONNX Runtime plugin
// does from ONNX Runtime's graph): the same checks and conversion as a file's
// bytes get. ONNX's shape inference annotates `mp` in place.
Model load_model_proto(onnx::ModelProto& mp, const std::string& base_dir);

// Converts one TensorProto (also used to read the ONNX test suite's .pb files).
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir);
Tensor read_tensor_pb_file(const std::string& path, std::string* name = nullptr);

// Every node (subgraphs included) that no kernel can run, one line each:
// "node 'x' (Foo, domain '', opset 13): no kernel for this op". Empty if all run.
std::vector<std::string> unsupported_nodes(const ir::Graph& g);
// Throws one Error listing all of unsupported_nodes(g), if any.
void validate_supported(const ir::Graph& g);

}  // namespace kestrel::onnx_io

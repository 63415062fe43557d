#include "ort_ep/graph_model.h"

#include <cstring>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ort_ep/ort_api.h"

namespace kestrel::ort_ep {
namespace {

const OrtApi& ort() { return *api().ort; }

std::string text(const char* s) { return s ? s : ""; }

// A node Kestrel cannot be shown (its reason).
struct Unconvertible : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string node_name(const OrtNode* n) {
  const char* name = nullptr;
  check(ort().Node_GetName(n, &name), "Node_GetName");
  if (name && *name) return name;
  size_t id = 0;
  check(ort().Node_GetId(n, &id), "Node_GetId");
  return op_of(n) + "_ort" + std::to_string(id);
}

// The tensor type of a value, or Unconvertible (a sequence, a map, an optional).
void write_type(const OrtValueInfo* v, onnx::ValueInfoProto& out) {
  out.set_name(name_of(v));
  const OrtTypeInfo* type = nullptr;
  check(ort().GetValueInfoTypeInfo(v, &type), "GetValueInfoTypeInfo");
  ONNXType kind = ONNX_TYPE_UNKNOWN;
  check(ort().GetOnnxTypeFromTypeInfo(type, &kind), "GetOnnxTypeFromTypeInfo");
  if (kind != ONNX_TYPE_TENSOR) throw Unconvertible("value '" + out.name() + "' is not a tensor");
  const OrtTensorTypeAndShapeInfo* info = nullptr;
  check(ort().CastTypeInfoToTensorInfo(type, &info), "CastTypeInfoToTensorInfo");
  ONNXTensorElementDataType et = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  check(ort().GetTensorElementType(info, &et), "GetTensorElementType");
  if (et == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) throw Unconvertible("value '" + out.name() + "' holds strings");
  auto* tensor = out.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(int(et));  // ONNX Runtime numbers element types as ONNX does
  size_t rank = 0;
  check(ort().GetDimensionsCount(info, &rank), "GetDimensionsCount");
  // No dims write no shape: a value of unknown rank reports none too (and
  // ONNX Runtime infers ConcatFromSequence's output as a scalar), while a
  // value without a shape is only checked at run time, by its real one.
  if (rank == 0 || (api().version >= 24 && !ort().TensorTypeAndShape_HasShape(info))) return;
  std::vector<int64_t> dims(rank);
  std::vector<const char*> symbols(rank, nullptr);
  if (rank) {
    check(ort().GetDimensions(info, dims.data(), rank), "GetDimensions");
    check(ort().GetSymbolicDimensions(info, symbols.data(), rank), "GetSymbolicDimensions");
  }
  auto* shape = tensor->mutable_shape();
  for (size_t d = 0; d < rank; ++d) {
    auto* dim = shape->add_dim();
    if (dims[d] >= 0) dim->set_dim_value(dims[d]);
    else if (symbols[d] && *symbols[d]) dim->set_dim_param(symbols[d]);
  }
}

// A tensor ONNX Runtime holds (an initializer, a TENSOR attribute), copied.
void write_tensor(const OrtValue* value, const std::string& name, onnx::TensorProto& out) {
  const TensorType type = tensor_type(value);
  if (type.element_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) throw Unconvertible("tensor '" + name + "' holds strings");
  out.set_name(name);
  out.set_data_type(type.element_type);
  for (int64_t d : type.dims) out.add_dims(d);
  size_t bytes = 0;
  check(ort().GetTensorSizeInBytes(value, &bytes), "GetTensorSizeInBytes");
  const void* data = nullptr;
  if (bytes) check(ort().GetTensorData(value, &data), "GetTensorData");
  out.set_raw_data(data, bytes);
}

// ReadOpAttr's two-call form: the size first, then the bytes.
template <typename T>
std::vector<T> read_array(const OrtOpAttr* a, OrtOpAttrType type) {
  size_t bytes = 0;
  OrtStatus* s = ort().ReadOpAttr(a, type, nullptr, 0, &bytes);
  if (s) ort().ReleaseStatus(s);  // "too small" carries the size needed
  std::vector<T> v(bytes / sizeof(T));
  if (!v.empty()) check(ort().ReadOpAttr(a, type, v.data(), v.size() * sizeof(T), &bytes), "ReadOpAttr");
  return v;
}

void write_attribute(const OrtOpAttr* a, onnx::AttributeProto& out) {
  const char* name = nullptr;
  check(ort().OpAttr_GetName(a, &name), "OpAttr_GetName");
  OrtOpAttrType type = ORT_OP_ATTR_UNDEFINED;
  check(ort().OpAttr_GetType(a, &type), "OpAttr_GetType");
  out.set_name(text(name));
  size_t bytes = 0;
  switch (type) {
    case ORT_OP_ATTR_INT: {
      int64_t v = 0;
      check(ort().ReadOpAttr(a, type, &v, sizeof v, &bytes), "ReadOpAttr");
      out.set_type(onnx::AttributeProto::INT);
      out.set_i(v);
      return;
    }
    case ORT_OP_ATTR_FLOAT: {
      float v = 0;
      check(ort().ReadOpAttr(a, type, &v, sizeof v, &bytes), "ReadOpAttr");
      out.set_type(onnx::AttributeProto::FLOAT);
      out.set_f(v);
      return;
    }
    case ORT_OP_ATTR_INTS:
      out.set_type(onnx::AttributeProto::INTS);
      for (int64_t v : read_array<int64_t>(a, type)) out.add_ints(v);
      return;
    case ORT_OP_ATTR_FLOATS:
      out.set_type(onnx::AttributeProto::FLOATS);
      for (float v : read_array<float>(a, type)) out.add_floats(v);
      return;
    case ORT_OP_ATTR_STRING: {
      std::vector<char> s = read_array<char>(a, type);
      out.set_type(onnx::AttributeProto::STRING);
      out.set_s(std::string(s.begin(), s.end()));
      return;
    }
    case ORT_OP_ATTR_TENSOR: {
      OrtValue* v = nullptr;
      check(ort().OpAttr_GetTensorAttributeAsOrtValue(a, &v), "OpAttr_GetTensorAttributeAsOrtValue");
      out.set_type(onnx::AttributeProto::TENSOR);
      try {
        write_tensor(v, "", *out.mutable_t());
      } catch (...) {
        ort().ReleaseValue(v);
        throw;
      }
      ort().ReleaseValue(v);
      return;
    }
    default:
      // Lists of strings (ReadOpAttr does not document their layout) and
      // subgraphs: the node stays with ONNX Runtime.
      throw Unconvertible("attribute '" + out.name() + "' is a subgraph or a list of strings");
  }
}

void write_node(const OrtNode* n, onnx::NodeProto& out) {
  const char* domain = nullptr;
  check(ort().Node_GetDomain(n, &domain), "Node_GetDomain");
  out.set_name(node_name(n));  // (model_of makes it unique)
  out.set_op_type(op_of(n));
  out.set_domain(text(domain));
  for (const OrtValueInfo* v : node_values(n, false)) out.add_input(name_of(v));
  for (const OrtValueInfo* v : node_values(n, true)) out.add_output(name_of(v));
  size_t count = 0;
  check(ort().Node_GetNumAttributes(n, &count), "Node_GetNumAttributes");
  std::vector<const OrtOpAttr*> attrs(count);
  if (count) check(ort().Node_GetAttributes(n, attrs.data(), count), "Node_GetAttributes");
  for (const OrtOpAttr* a : attrs) write_attribute(a, *out.add_attribute());
  if (!implicit_inputs(n).empty()) throw Unconvertible("it reads values of an enclosing graph");
}

bool is_constant(const OrtValueInfo* v) {
  bool constant = false;
  check(ort().ValueInfo_IsConstantInitializer(v, &constant), "ValueInfo_IsConstantInitializer");
  return constant;
}

}  // namespace

std::vector<const OrtValueInfo*> node_values(const OrtNode* n, bool outputs) {
  size_t count = 0;
  check(outputs ? ort().Node_GetNumOutputs(n, &count) : ort().Node_GetNumInputs(n, &count), "Node_GetNum{In,Out}puts");
  std::vector<const OrtValueInfo*> v(count);
  if (count)
    check(outputs ? ort().Node_GetOutputs(n, v.data(), count) : ort().Node_GetInputs(n, v.data(), count),
          "Node_Get{In,Out}puts");
  return v;
}

std::vector<const OrtValueInfo*> implicit_inputs(const OrtNode* n) {
  size_t count = 0;
  check(ort().Node_GetNumImplicitInputs(n, &count), "Node_GetNumImplicitInputs");
  std::vector<const OrtValueInfo*> v(count);
  if (count) check(ort().Node_GetImplicitInputs(n, v.data(), count), "Node_GetImplicitInputs");
  return v;
}

std::string name_of(const OrtValueInfo* v) {
  if (!v) return "";  // an omitted optional input or output
  const char* name = nullptr;
  check(ort().GetValueInfoName(v, &name), "GetValueInfoName");
  return name ? name : "";
}

std::string op_of(const OrtNode* n) {
  const char* op = nullptr;
  check(ort().Node_GetOperatorType(n, &op), "Node_GetOperatorType");
  return text(op);
}

std::vector<std::string> value_names(const OrtNode* n, bool outputs) {
  std::vector<std::string> names;
  for (const OrtValueInfo* v : node_values(n, outputs)) names.push_back(name_of(v));
  return names;
}

TensorType tensor_type(const OrtValue* value) {
  OrtTensorTypeAndShapeInfo* info = nullptr;
  check(ort().GetTensorTypeAndShape(value, &info), "GetTensorTypeAndShape");
  ONNXTensorElementDataType et = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  size_t rank = 0;
  OrtStatus* s = ort().GetTensorElementType(info, &et);
  if (!s) s = ort().GetDimensionsCount(info, &rank);
  TensorType t;
  t.dims.resize(rank);
  if (!s && rank) s = ort().GetDimensions(info, t.dims.data(), rank);
  ort().ReleaseTensorTypeAndShapeInfo(info);
  check(s, "reading a tensor's type");
  t.element_type = int32_t(et);
  return t;
}

std::vector<const OrtNode*> nodes_of(const OrtGraph* graph) {
  size_t count = 0;
  check(ort().Graph_GetNumNodes(graph, &count), "Graph_GetNumNodes");
  std::vector<const OrtNode*> nodes(count);
  if (count) check(ort().Graph_GetNodes(graph, nodes.data(), count), "Graph_GetNodes");
  return nodes;
}

std::string describe(const OrtNode* node) {
  std::string s = "'";
  s += node_name(node);
  s += "' (";
  s += op_of(node);
  s += ")";
  return s;
}

std::vector<std::string> unconvertible(const std::vector<const OrtNode*>& nodes) {
  std::vector<std::string> why(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    try {
      onnx::NodeProto scratch;
      size_t subgraphs = 0;
      check(ort().Node_GetNumSubgraphs(nodes[i], &subgraphs), "Node_GetNumSubgraphs");
      if (subgraphs) throw Unconvertible("it holds subgraphs");
      // Attributes only: their tensors are small; initializers are not read here.
      write_node(nodes[i], scratch);
      onnx::ValueInfoProto type;
      for (const OrtValueInfo* v : node_values(nodes[i], false))
        if (v) write_type(v, type);
      for (const OrtValueInfo* v : node_values(nodes[i], true))
        if (v) write_type(v, type);
    } catch (const Unconvertible& e) {
      why[i] = e.what();
    }
  }
  return why;
}

GraphModel model_of(const OrtGraph* graph, const std::vector<const OrtNode*>& nodes, bool graph_outputs) {
  GraphModel out;
  onnx::ModelProto& m = out.model;
  int64_t ir_version = 0;
  check(ort().Graph_GetOnnxIRVersion(graph, &ir_version), "Graph_GetOnnxIRVersion");
  m.set_ir_version(ir_version);
  m.set_producer_name("onnxruntime-kestrel-ep");
  size_t opsets = 0;
  check(ort().Graph_GetNumOperatorSets(graph, &opsets), "Graph_GetNumOperatorSets");
  std::vector<const char*> domains(opsets);
  std::vector<int64_t> versions(opsets);
  if (opsets) check(ort().Graph_GetOperatorSets(graph, domains.data(), versions.data(), opsets), "Graph_GetOperatorSets");
  for (size_t i = 0; i < opsets; ++i) {
    auto* os = m.add_opset_import();
    os->set_domain(text(domains[i]));
    os->set_version(versions[i]);
  }

  onnx::GraphProto& g = *m.mutable_graph();
  const char* graph_name = nullptr;
  check(ort().Graph_GetName(graph, &graph_name), "Graph_GetName");
  g.set_name(graph_name && *graph_name ? graph_name : "onnxruntime_subgraph");

  std::unordered_set<std::string> made;  // by a kept node
  for (const OrtNode* n : nodes)
    for (const OrtValueInfo* v : node_values(n, true))
      if (v) made.insert(name_of(v));
  std::unordered_set<std::string> sourced;  // initializers and inputs written
  std::unordered_set<std::string> node_names;
  for (const OrtNode* n : nodes) {
    onnx::NodeProto& proto = *g.add_node();
    write_node(n, proto);
    // ONNX Runtime's names are unique in practice, not by rule.
    std::string name = proto.name();
    for (int k = 2; !node_names.insert(name).second; ++k) name = proto.name() + "_" + std::to_string(k);
    proto.set_name(name);
    out.node_names.push_back(name);
    for (const OrtValueInfo* v : node_values(n, false)) {
      if (!v) continue;
      const std::string name = name_of(v);
      if (made.count(name) || !sourced.insert(name).second) continue;
      if (is_constant(v)) {
        const OrtValue* value = nullptr;
        check(ort().ValueInfo_GetInitializerValue(v, &value), "ValueInfo_GetInitializerValue");
        write_tensor(value, name, *g.add_initializer());
      } else {
        write_type(v, *g.add_input());
        out.inputs.push_back(name);
      }
    }
  }

  // ONNX Runtime's types of the values in between: its shape inference
  // knows ops (and newer opsets) that the ONNX library Kestrel links may not.
  for (const OrtNode* n : nodes)
    for (const OrtValueInfo* v : node_values(n, true))
      if (v) write_type(v, *g.add_value_info());

  // Outputs.
  std::vector<const OrtValueInfo*> outputs;
  if (graph_outputs) {
    size_t count = 0;
    check(ort().Graph_GetNumOutputs(graph, &count), "Graph_GetNumOutputs");
    outputs.resize(count);
    if (count) check(ort().Graph_GetOutputs(graph, outputs.data(), count), "Graph_GetOutputs");
  } else {
    std::unordered_set<const OrtNode*> kept(nodes.begin(), nodes.end());
    std::unordered_set<std::string> read_outside;
    for (const OrtNode* n : nodes_of(graph)) {
      if (kept.count(n)) continue;
      for (const OrtValueInfo* v : node_values(n, false)) read_outside.insert(name_of(v));
      for (const OrtValueInfo* v : implicit_inputs(n)) read_outside.insert(name_of(v));
    }
    std::set<std::string> listed;
    for (const OrtNode* n : nodes)
      for (const OrtValueInfo* v : node_values(n, true)) {
        if (!v) continue;
        bool graph_output = false;
        check(ort().ValueInfo_IsGraphOutput(v, &graph_output), "ValueInfo_IsGraphOutput");
        if ((graph_output || read_outside.count(name_of(v))) && listed.insert(name_of(v)).second) outputs.push_back(v);
      }
  }
  for (const OrtValueInfo* v : outputs) {
    write_type(v, *g.add_output());
    out.outputs.push_back(name_of(v));
  }
  return out;
}

}  // namespace kestrel::ort_ep

// Each node against ONNX's own schema for its op, the check ONNX Runtime
// makes at load: a node with the wrong number of inputs or outputs, an
// attribute of the wrong type (which every reader would silently replace by
// its default), an unknown or missing required attribute, or a deprecated op.
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "onnx/model_checks.h"

namespace kestrel::onnx_io {
namespace {

// Default-domain ops whose schema changed in opsets 18 to 21 (ONNX 1.13 to
// 1.16, from ONNX's operator changelog), with the opsets that changed them.
// The libonnx Kestrel builds against may know only older schemas; for a model
// at or past one of these opsets its schema is out of date (a newer version
// may take more inputs or new attributes), so only what cannot have changed
// is checked.
const std::unordered_map<std::string, std::vector<int>>& revised_after_opset_17() {
  static const std::unordered_map<std::string, std::vector<int>> ops = {
      {"AffineGrid", {20}},       {"AveragePool", {19}},       {"BitwiseAnd", {18}},
      {"BitwiseNot", {18}},       {"BitwiseOr", {18}},         {"BitwiseXor", {18}},
      {"Cast", {19, 21}},         {"CastLike", {19, 21}},      {"CenterCropPad", {18}},
      {"Col2Im", {18}},           {"Constant", {19, 21}},      {"ConstantOfShape", {20, 21}},
      {"DFT", {20}},              {"DeformConv", {19}},        {"DequantizeLinear", {19, 21}},
      {"Equal", {19}},            {"Flatten", {21}},           {"Gelu", {20}},
      {"GridSample", {20}},       {"GroupNormalization", {18, 21}}, {"Identity", {19, 21}},
      {"If", {19, 21}},           {"ImageDecoder", {20}},      {"IsInf", {20}},
      {"IsNaN", {20}},            {"Loop", {19, 21}},          {"LpPool", {18}},
      {"Mish", {18}},             {"OptionalGetElement", {18}}, {"OptionalHasElement", {18}},
      {"Pad", {18, 19, 21}},      {"QLinearMatMul", {21}},     {"QuantizeLinear", {19, 21}},
      {"ReduceL1", {18}},         {"ReduceL2", {18}},          {"ReduceLogSum", {18}},
      {"ReduceLogSumExp", {18}},  {"ReduceMax", {18, 20}},     {"ReduceMean", {18}},
      {"ReduceMin", {18, 20}},    {"ReduceProd", {18}},        {"ReduceSumSquare", {18}},
      {"RegexFullMatch", {20}},   {"Reshape", {19, 21}},       {"Resize", {18, 19}},
      {"Scan", {19, 21}},         {"ScatterElements", {18}},   {"ScatterND", {18}},
      {"Shape", {19, 21}},        {"Size", {19, 21}},          {"Split", {18}},
      {"Squeeze", {21}},          {"StringConcat", {20}},      {"StringSplit", {20}},
      {"Transpose", {21}},        {"Unsqueeze", {21}},
  };
  return ops;
}

// Attribute types of the default-domain ops Kestrel runs that are newer than
// libonnx 1.12 (so it has no schema for them), from ONNX's operator docs.
const std::unordered_map<std::string, std::unordered_map<std::string, int>>& newer_op_attribute_types() {
  using A = onnx::AttributeProto;
  static const std::unordered_map<std::string, std::unordered_map<std::string, int>> ops = {
      {"Gelu", {{"approximate", A::STRING}}},
      {"GroupNormalization", {{"epsilon", A::FLOAT}, {"num_groups", A::INT}, {"stash_type", A::INT}}},
  };
  return ops;
}

// Whether `schema` is the op's current definition at `opset`: true unless the
// op was revised after the newest opset the linked libonnx knows.
bool schema_is_current(const onnx::OpSchema& schema, const std::string& domain, int opset) {
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto range = known.find(domain);
  if (range == known.end() || opset <= range->second.second) return true;
  if (!domain.empty()) return false;  // no revision list for other domains
  auto revised = revised_after_opset_17().find(schema.Name());
  if (revised == revised_after_opset_17().end()) return true;
  for (int v : revised->second)
    if (v > range->second.second && v <= opset) return false;
  return true;
}

std::string count_range(int lo, int hi) {
  if (hi == std::numeric_limits<int>::max()) return "at least " + std::to_string(lo);
  if (lo == hi) return std::to_string(lo);
  return std::to_string(lo) + " to " + std::to_string(hi);
}

std::string type_name(int t) {
  return onnx::AttributeProto_AttributeType_IsValid(t)
             ? onnx::AttributeProto_AttributeType_Name(onnx::AttributeProto_AttributeType(t))
             : "type " + std::to_string(t);
}

}  // namespace

void check_node_schema(const onnx::NodeProto& n, const std::string& label, const Domains& domains) {
  // For every node, schema or not: a second value would silently replace the first.
  std::unordered_set<std::string> seen;
  for (const auto& a : n.attribute())
    KESTREL_CHECK(seen.insert(a.name()).second, label, " has attribute '", a.name(), "' twice");
  const std::string domain = canonical_domain(n.domain());
  auto imported = domains.find(domain);
  if (imported == domains.end()) return;  // the loader names the missing opset_import
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), imported->second, domain);
  const std::string op_at = n.op_type() + " at opset " + std::to_string(imported->second);
  if (!schema) {
    auto newer = newer_op_attribute_types().find(n.op_type());
    if (!domain.empty() || newer == newer_op_attribute_types().end()) return;  // left to the unsupported-op report
    for (const auto& a : n.attribute()) {
      auto declared = newer->second.find(a.name());
      KESTREL_CHECK(declared == newer->second.end() || a.type() == declared->second, label, ": attribute '",
                    a.name(), "' is ", type_name(a.type()), ", but ", op_at, " declares it ",
                    type_name(declared->second));
    }
    return;
  }
  KESTREL_CHECK(!schema->Deprecated(), label, ": ", n.op_type(), " is deprecated since opset ",
                schema->since_version(), " and not defined at opset ", imported->second);
  const bool current = schema_is_current(*schema, domain, imported->second);

  // A newer version of a revised op may take more inputs, outputs or
  // attributes than the schema here knows, never fewer.
  KESTREL_CHECK(n.input_size() >= schema->min_input() && (!current || n.input_size() <= schema->max_input()),
                label, " has ", n.input_size(), " inputs, but ", op_at, " takes ",
                count_range(schema->min_input(), current ? schema->max_input() : std::numeric_limits<int>::max()));
  KESTREL_CHECK(n.output_size() >= schema->min_output() && (!current || n.output_size() <= schema->max_output()),
                label, " has ", n.output_size(), " outputs, but ", op_at, " has ",
                count_range(schema->min_output(), current ? schema->max_output() : std::numeric_limits<int>::max()));
  for (const auto& a : n.attribute()) {
    auto declared = schema->attributes().find(a.name());
    if (declared == schema->attributes().end()) continue;  // unknown names: Verify below
    KESTREL_CHECK(a.type() == declared->second.type, label, ": attribute '", a.name(), "' is ", type_name(a.type()),
                  ", but ", op_at, " declares it ", type_name(declared->second.type));
  }
  if (!current) return;
  // The rest of ONNX's own verification: attributes the op does not have or
  // has twice, required attributes, an empty name for a required input.
  try {
    schema->Verify(n);
  } catch (const std::exception& e) {
    fail(label, " does not conform to ", op_at, ": ", e.what());
  }
}

}  // namespace kestrel::onnx_io

// Attribute values checked at load, before ONNX's shape inference reads them:
// it divides by strides (a zero stopped the process with SIGFPE), and a
// window with a zero or negative size, or pads ONNX Runtime refuses, would
// otherwise be found only at the first run, or not at all.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "onnx/model_checks.h"

namespace kestrel::onnx_io {
namespace {

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// The attribute's values if it is present as a list of ints (a wrongly typed
// one is refused by the schema check, or left to the op where no schema says).
std::optional<std::vector<int64_t>> ints_attr(const onnx::NodeProto& n, const std::string& name) {
  const onnx::AttributeProto* a = find_attr(n, name);
  if (!a || a->type() != onnx::AttributeProto::INTS) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::string list(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  os << "]";
  return os.str();
}

// Sliding-window ops: where their data input is and, for convolutions, the
// weight whose rank also gives the spatial rank.
struct WindowOp {
  const char* op;
  int weight_input;  // -1: none
  bool pool;         // ONNX Runtime's pool rule: pads smaller than the kernel
};
constexpr WindowOp kWindowOps[] = {
    {"Conv", 1, false},         {"ConvInteger", 1, false}, {"QLinearConv", 3, false},
    {"ConvTranspose", 1, false}, {"AveragePool", -1, true}, {"MaxPool", -1, true},
    {"LpPool", -1, true},        {"MaxUnpool", -1, false},
};

void check_window(const onnx::NodeProto& n, const WindowOp& op, const std::string& label,
                  const std::unordered_map<std::string, int>& ranks) {
  auto kernel = ints_attr(n, "kernel_shape");
  auto strides = ints_attr(n, "strides");
  auto dilations = ints_attr(n, "dilations");
  auto pads = ints_attr(n, "pads");
  auto output_padding = ints_attr(n, "output_padding");
  for (auto [name, values] : {std::pair{"kernel_shape", &kernel}, {"strides", &strides}, {"dilations", &dilations}})
    if (*values)
      for (int64_t v : **values)
        KESTREL_CHECK(v > 0, label, ": attribute '", name, "' must be positive in every dimension, got ",
                      list(**values));
  for (auto [name, values] : {std::pair{"pads", &pads}, {"output_padding", &output_padding}})
    if (*values)
      for (int64_t v : **values)
        KESTREL_CHECK(v >= 0, label, ": attribute '", name, "' must not be negative, got ", list(**values));

  // The spatial rank: from the declared rank of the data or the weight, else
  // from the first attribute that gives one. Every attribute must agree.
  auto declared_rank = [&](int input) -> int {
    if (input < 0 || input >= n.input_size()) return -1;
    auto r = ranks.find(n.input(input));
    return r == ranks.end() ? -1 : r->second;
  };
  const int data_rank = declared_rank(0), weight_rank = declared_rank(op.weight_input);
  if (data_rank >= 0 && weight_rank >= 0)
    KESTREL_CHECK(data_rank == weight_rank, label, ": input '", n.input(0), "' has rank ", data_rank,
                  " but weight '", n.input(op.weight_input), "' has rank ", weight_rank);
  int spatial = std::max(data_rank, weight_rank) >= 2 ? std::max(data_rank, weight_rank) - 2 : -1;
  std::string spatial_from;
  if (spatial >= 0) {
    int from = data_rank >= 2 ? 0 : op.weight_input;
    spatial_from = "input '" + n.input(from) + "' of rank " + std::to_string(spatial + 2);
  }
  auto agree = [&](const char* name, const std::optional<std::vector<int64_t>>& values, int per_dim) {
    if (!values) return;
    if (spatial < 0) {
      KESTREL_CHECK(values->size() % per_dim == 0, label, ": attribute '", name, "' has ", values->size(),
                    " values; it needs a begin and an end for each spatial dim");
      spatial = int(values->size()) / per_dim;
      spatial_from = std::string("attribute '") + name + "'";
      return;
    }
    KESTREL_CHECK(int64_t(values->size()) == int64_t(spatial) * per_dim, label, ": attribute '", name, "' has ",
                  values->size(), " values, but the node has ", spatial, " spatial dims (from ", spatial_from, ")",
                  per_dim == 2 ? " (pads needs a begin and an end for each)" : "");
  };
  agree("kernel_shape", kernel, 1);
  agree("strides", strides, 1);
  agree("dilations", dilations, 1);
  agree("output_padding", output_padding, 1);
  agree("pads", pads, 2);

  if (op.pool && kernel && pads)
    for (size_t i = 0; i < kernel->size(); ++i)
      KESTREL_CHECK((*pads)[i] < (*kernel)[i] && (*pads)[i + kernel->size()] < (*kernel)[i], label,
                    ": attribute 'pads' ", list(*pads), " must be smaller than the kernel (kernel_shape ",
                    list(*kernel), ") in every dimension");
  // ONNX Runtime's rule (as PyTorch's): output_padding below the stride or
  // the dilation of its dimension, else the extra rows would lie beyond
  // anything the input reaches.
  if (output_padding)
    for (size_t i = 0; i < output_padding->size(); ++i) {
      int64_t stride = strides ? (*strides)[i] : 1, dilation = dilations ? (*dilations)[i] : 1;
      KESTREL_CHECK((*output_padding)[i] < std::max(stride, dilation), label, ": attribute 'output_padding' ",
                    list(*output_padding), " must be smaller than the stride or the dilation in every dimension",
                    " (dimension ", i, ": output_padding ", (*output_padding)[i], ", stride ", stride, ", dilation ",
                    dilation, ")");
    }
}

// Constant holds exactly one value; with several, which one a reader takes
// is arbitrary.
void check_constant(const onnx::NodeProto& n, const std::string& label) {
  static const char* const kValueAttrs[] = {"value",     "value_float",  "value_floats",  "value_int",
                                            "value_ints", "value_string", "value_strings", "sparse_value"};
  std::string present;
  int count = 0;
  for (const char* name : kValueAttrs)
    if (find_attr(n, name)) present += std::string(count++ ? ", " : "") + name;
  KESTREL_CHECK(count == 1, label, " must have exactly one of value, value_float, value_floats, value_int, ",
                "value_ints, value_string, value_strings, sparse_value; it has ", count ? present : "none");
}

}  // namespace

void check_node_attribute_values(const onnx::NodeProto& n, const std::string& label,
                                 const std::unordered_map<std::string, int>& ranks) {
  if (!canonical_domain(n.domain()).empty()) return;
  for (const WindowOp& op : kWindowOps)
    if (n.op_type() == op.op) return check_window(n, op, label, ranks);
  if (n.op_type() == "Constant") return check_constant(n, label);
  if (n.op_type() == "SpaceToDepth" || n.op_type() == "DepthToSpace") {
    const onnx::AttributeProto* b = find_attr(n, "blocksize");
    KESTREL_CHECK(!b || b->i() > 0, label, ": attribute 'blocksize' must be positive, got ", b ? b->i() : 0);
  }
}

}  // namespace kestrel::onnx_io

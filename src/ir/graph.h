// Kestrel's graph: Values (tensors by name, with dtype and possibly symbolic
// shape) and Nodes (an op applied to values). Subgraphs (If/Loop bodies) are
// Graphs held by attributes; names they use but do not define are resolved in
// the enclosing graph at run time.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/tensor.h"

namespace kestrel::ir {

struct Graph;

// A dimension is a known size, a symbol ("batch"), or unknown (empty symbol, value -1).
struct Dim {
  int64_t value = -1;
  std::string symbol;
  bool known() const { return value >= 0; }
};

struct Value {
  std::string name;
  DType dtype = DType::Undefined;
  std::optional<std::vector<Dim>> shape;  // nullopt: rank unknown
};

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Graph, Floats, Ints, Strings };
  Kind kind = Kind::Int;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string name;     // may be empty in the file; the loader names it "<op>_<index>"
  std::string op_type;
  std::string domain;   // "" is the default ONNX domain
  int opset = 0;        // opset version of `domain` that the model imports
  std::vector<int> inputs;   // value ids; -1 for an omitted optional input
  std::vector<int> outputs;  // value ids; -1 for an omitted optional output
  std::map<std::string, Attribute> attrs;

  bool has(const std::string& a) const { return attrs.count(a) != 0; }
  int64_t attr_i(const std::string& a, int64_t def) const;
  float attr_f(const std::string& a, float def) const;
  std::string attr_s(const std::string& a, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& a, std::vector<int64_t> def = {}) const;
  std::vector<float> attr_floats(const std::string& a, std::vector<float> def = {}) const;
  const Attribute* attr(const std::string& a) const;
  // "node 'conv1' (Conv)" for error messages.
  std::string where() const;
};

struct Graph {
  std::string name;
  std::vector<Value> values;
  std::vector<Node> nodes;  // topologically sorted once loaded
  std::vector<int> inputs;   // graph inputs that are not initializers
  std::vector<int> outputs;
  std::unordered_map<int, Tensor> initializers;  // value id -> constant data
  std::unordered_map<std::string, int> by_name;
  // Values used here but defined in an enclosing graph (subgraphs only).
  std::vector<int> outer_refs;

  int find(const std::string& name) const;  // -1 if absent
  int add_value(const std::string& name);    // returns the existing id if present
};

// Sets attribute k of n, replacing any of that name (what the rewrites
// write onto the nodes they make or change).
inline void set_attr(Node& n, const char* k, int64_t v) {
  n.attrs[k].kind = Attribute::Kind::Int;
  n.attrs[k].i = v;
}
inline void set_attr(Node& n, const char* k, const std::string& v) {
  n.attrs[k].kind = Attribute::Kind::String;
  n.attrs[k].s = v;
}
inline void set_attr(Node& n, const char* k, const std::vector<float>& v) {
  n.attrs[k].kind = Attribute::Kind::Floats;
  n.attrs[k].floats = v;
}
inline void set_attr(Node& n, const char* k, const std::vector<int64_t>& v) {
  n.attrs[k].kind = Attribute::Kind::Ints;
  n.attrs[k].ints = v;
}

// Names that a node's subgraphs (If branches, Loop bodies), at any depth,
// read from scopes outside themselves: implicit inputs of the node.
std::vector<std::string> implicit_reads(const Node& n);

// Sorts g.nodes so every node follows the producers of its inputs. Throws an
// Error naming the nodes on a cycle, or a value that nothing produces.
void topo_sort(Graph& g);

}  // namespace kestrel::ir

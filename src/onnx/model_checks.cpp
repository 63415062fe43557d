// The walk over every graph of a model that runs the load-time checks, and
// the checks on names: ONNX graphs are in single static assignment form.
#include "onnx/model_checks.h"

#include <onnx/onnx_pb.h>

#include <unordered_set>

#include "core/error.h"
#include "ir/graph.h"

namespace kestrel::onnx_io {
namespace {

// Records the ranks the file fixes: those of initializers and of the main
// graph's inputs (Kestrel refuses a run input of another rank). value_info
// and subgraph inputs are an exporter's annotations, not binding, and are
// left out. Entries of an enclosing graph stay visible: a branch may read them.
void add_binding_ranks(const onnx::GraphProto& g, bool main, std::unordered_map<std::string, int>& ranks) {
  // A subgraph's own names hide the enclosing ones.
  for (const auto& v : g.input()) ranks.erase(v.name());
  for (const auto& n : g.node())
    for (const auto& out : n.output()) ranks.erase(out);
  if (main)
    for (const auto& v : g.input())
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
        ranks[v.name()] = v.type().tensor_type().shape().dim_size();
  for (const auto& t : g.initializer()) ranks[t.name()] = t.dims_size();
}

void check_graph(const onnx::GraphProto& g, const Domains& domains, bool main,
                 std::unordered_map<std::string, int> ranks) {
  check_graph_names(g);
  add_binding_ranks(g, main, ranks);
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    const std::string label = node_label(n, i);
    check_node_schema(n, label, domains);
    check_node_attribute_values(n, label, ranks);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) check_graph(a.g(), domains, false, ranks);
      for (const auto& sub : a.graphs()) check_graph(sub, domains, false, ranks);
    }
  }
}

}  // namespace

std::string node_label(const onnx::NodeProto& n, int index) {
  ir::Node shown;
  shown.op_type = n.op_type();
  shown.domain = canonical_domain(n.domain());
  shown.name = node_name(n, index);
  return shown.where();
}

void check_graph_names(const onnx::GraphProto& g) {
  const std::string graph = "graph '" + g.name() + "'";
  std::unordered_set<std::string> inputs, initializers;
  for (const auto& v : g.input())
    KESTREL_CHECK(inputs.insert(v.name()).second, graph, " lists graph input '", v.name(), "' twice");
  for (const auto& t : g.initializer())
    KESTREL_CHECK(initializers.insert(t.name()).second, graph, " has initializer '", t.name(),
                  "' twice (ONNX requires unique names; which one is meant is ambiguous)");
  // value name -> the node that writes it
  std::unordered_map<std::string, std::string> writer;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    KESTREL_CHECK(n.output_size() > 0, node_label(n, i), " has no outputs");
    for (const std::string& out : n.output()) {
      if (out.empty()) continue;  // an omitted optional output
      KESTREL_CHECK(!inputs.count(out), node_label(n, i), " writes '", out, "', which is a graph input of ", graph);
      KESTREL_CHECK(!initializers.count(out), node_label(n, i), " writes '", out, "', which is an initializer of ",
                    graph);
      auto [at, fresh] = writer.emplace(out, node_label(n, i));
      KESTREL_CHECK(fresh, "value '", out, "' is produced twice: by ", at->second, " and by ", node_label(n, i));
    }
  }
}

void check_model(const onnx::ModelProto& mp, const Domains& domains) {
  check_graph(mp.graph(), domains, true, {});
}

}  // namespace kestrel::onnx_io

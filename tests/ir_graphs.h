// Building small ir::Graphs by hand and running them on the CPU backend, for
// the tests of graph passes (passes_test.cpp, qdq_add_test.cpp).
#pragma once
#include <string>
#include <vector>

#include "backends/backend.h"
#include "ir/graph.h"

namespace kestrel::test {

// A node of `op` at opset 17 reading and writing the named values (made
// where new).
inline ir::Node make_node(ir::Graph& g, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out) {
  ir::Node n;
  n.op_type = op;
  n.name = op + "_" + std::to_string(g.nodes.size());
  n.opset = 17;
  for (auto& s : in) n.inputs.push_back(g.add_value(s));
  for (auto& s : out) n.outputs.push_back(g.add_value(s));
  return n;
}

// The graph's outputs for one input, on the CPU backend at 2 threads (no passes).
inline std::vector<Tensor> run_graph(const ir::Graph& g, const Tensor& x) {
  auto compiled = backends::make_cpu_backend()->compile(g);
  backends::RunOptions opts;
  opts.threads = 2;
  return compiled->run({x}, opts);
}

}  // namespace kestrel::test

#include "ir/graph.h"

#include <queue>
#include <sstream>

namespace kestrel::ir {

const Attribute* Node::attr(const std::string& a) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? nullptr : &it->second;
}

int64_t Node::attr_i(const std::string& a, int64_t def) const {
  const Attribute* p = attr(a);
  return p ? p->i : def;
}

float Node::attr_f(const std::string& a, float def) const {
  const Attribute* p = attr(a);
  return p ? p->f : def;
}

std::string Node::attr_s(const std::string& a, const std::string& def) const {
  const Attribute* p = attr(a);
  return p ? p->s : def;
}

std::vector<int64_t> Node::attr_ints(const std::string& a, std::vector<int64_t> def) const {
  const Attribute* p = attr(a);
  return p ? p->ints : def;
}

std::vector<float> Node::attr_floats(const std::string& a, std::vector<float> def) const {
  const Attribute* p = attr(a);
  return p ? p->floats : def;
}

std::string Node::where() const {
  return "node '" + name + "' (" + (domain.empty() ? "" : domain + ".") + op_type + ")";
}

int Graph::find(const std::string& n) const {
  auto it = by_name.find(n);
  return it == by_name.end() ? -1 : it->second;
}

int Graph::add_value(const std::string& n) {
  int id = find(n);
  if (id >= 0) return id;
  id = int(values.size());
  values.push_back(Value{n, DType::Undefined, std::nullopt});
  by_name[n] = id;
  return id;
}

namespace {
std::vector<std::string> outer_names(const Graph& g) {
  std::vector<std::string> names;
  for (int v : g.outer_refs) names.push_back(g.values[size_t(v)].name);
  for (const Node& n : g.nodes)
    for (std::string& name : implicit_reads(n))
      if (g.find(name) < 0) names.push_back(std::move(name));
  return names;
}
}  // namespace

std::vector<std::string> implicit_reads(const Node& n) {
  std::vector<std::string> names;
  for (const auto& [k, a] : n.attrs)
    if (a.g)
      for (std::string& name : outer_names(*a.g)) names.push_back(std::move(name));
  return names;
}

void topo_sort(Graph& g) {
  // producer[v] = index of the node writing value v, or -1.
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int o : g.nodes[i].outputs)
      if (o >= 0) {
        if (producer[size_t(o)] >= 0)
          fail("value '", g.values[size_t(o)].name, "' is produced twice: by ", g.nodes[size_t(producer[size_t(o)])].where(),
               " and by ", g.nodes[i].where());
        producer[size_t(o)] = int(i);
      }
  std::vector<bool> available(g.values.size(), false);
  for (int v : g.inputs) available[size_t(v)] = true;
  for (auto& [v, t] : g.initializers) available[size_t(v)] = true;
  for (int v : g.outer_refs) available[size_t(v)] = true;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs)
      if (v >= 0 && producer[size_t(v)] < 0 && !available[size_t(v)])
        fail(g.nodes[i].where(), " reads '", g.values[size_t(v)].name,
             "', which is neither a graph input, an initializer nor any node's output");

  // Kahn's algorithm, stable in file order. A node depends on the producers
  // of its inputs and of the values its subgraphs read implicitly.
  std::vector<int> pending(g.nodes.size(), 0);
  std::vector<std::vector<int>> consumers(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::vector<int> deps = g.nodes[i].inputs;
    for (const std::string& name : implicit_reads(g.nodes[i])) deps.push_back(g.find(name));
    for (int v : deps)
      if (v >= 0 && producer[size_t(v)] >= 0 && producer[size_t(v)] != int(i)) {
        ++pending[i];
        consumers[size_t(producer[size_t(v)])].push_back(int(i));
      }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (pending[i] == 0) ready.push(int(i));
  std::vector<Node> sorted;
  sorted.reserve(g.nodes.size());
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    sorted.push_back(g.nodes[size_t(i)]);
    for (int c : consumers[size_t(i)])
      if (--pending[size_t(c)] == 0) ready.push(c);
  }
  if (sorted.size() != g.nodes.size()) {
    std::ostringstream os;
    int shown = 0;
    for (size_t i = 0; i < g.nodes.size() && shown < 8; ++i)
      if (pending[i] > 0) os << (shown++ ? ", " : "") << g.nodes[i].where();
    fail("the graph has a cycle; nodes on or after it: ", os.str());
  }
  g.nodes = std::move(sorted);
}

}  // namespace kestrel::ir

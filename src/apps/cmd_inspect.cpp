// kestrel inspect: what a model is and whether Kestrel can run it.
#include <cstdio>
#include <map>
#include <optional>

#include "apps/cli.h"
#include "apps/inspect_families.h"
#include "apps/json_report.h"
#include "families/families.h"
#include "onnx/loader.h"
#include "runtime/prepare.h"

namespace kestrel::cli {
namespace {

void histogram(const ir::Graph& g, std::map<std::string, int>& h) {
  for (const auto& n : g.nodes) {
    ++h[(n.domain.empty() ? "" : n.domain + ".") + n.op_type];
    for (const auto& [k, a] : n.attrs)
      if (a.g) histogram(*a.g, h);
  }
}

std::vector<TensorInfo> infos(const ir::Graph& g, const std::vector<int>& ids) {
  std::vector<TensorInfo> v;
  for (int id : ids) v.push_back({g.values[size_t(id)].name, g.values[size_t(id)].dtype, g.values[size_t(id)].shape});
  return v;
}

}  // namespace

// With --backend: builds a session (weights uploaded, nothing run) and
// reports its static partition; with --run as well, runs it once on
// synthesized inputs and reports where each node ran and its share of FLOPs.
std::optional<backends::PlacementReport> placement_of(const Args& a, std::string& summary) {
  if (!a.flags.count("--backend")) return std::nullopt;
  auto s = Session::load(a.positional[0], session_options(a));
  if (a.has("--run")) s->run(make_inputs(*s, a));
  auto p = a.has("--run") ? s->placement() : s->planned_placement();
  summary = p ? p->summary() : s->placement_summary();
  if (!p) {  // the CPU backend runs everything
    p = backends::PlacementReport{};
    p->device = s->backend_name();
    p->cpu_nodes = int(s->model().graph.nodes.size());
    p->cpu_reasons["the CPU backend runs every node"] = p->cpu_nodes;
    p->ran = a.has("--run");
  }
  return p;
}

// One line per node of the graph as Kestrel runs it (after its load-time
// passes): op, name, inputs (initializers with their shape) and outputs.
void print_nodes(ir::Graph& g, const runtime::Config& c) {
  runtime::prepare_graph(g, c);
  auto value = [&](int v) {
    if (v < 0) return std::string("-");
    std::string s = g.values[size_t(v)].name;
    if (auto it = g.initializers.find(v); it != g.initializers.end()) s += "=const" + shape_str(it->second.shape());
    return s;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    std::string ins, outs;
    for (int v : n.inputs) ins += (ins.empty() ? "" : ", ") + value(v);
    for (int v : n.outputs) outs += (outs.empty() ? "" : ", ") + value(v);
    std::printf("%4zu %-20s %s (%s) -> %s\n", i, n.op_type.c_str(), n.name.c_str(), ins.c_str(), outs.c_str());
  }
}

int cmd_inspect(int argc, char** argv) {
  Args a = parse_args(argc, argv, {"--backend", "--precision", "--dim", "--shape", "--input", "--inputs", "--threads"}, {"--json", "--nodes", "--run"});
  KESTREL_CHECK(a.positional.size() == 1, "inspect expects one MODEL argument");
  // Inspect must work on models Kestrel cannot run, so it loads without validating.
  onnx_io::Model m = onnx_io::load_model_file(a.positional[0]);
  const ir::Graph& g = m.graph;
  if (a.has("--nodes")) {
    print_nodes(m.graph, runtime::Config::of(session_options(a)));
    return 0;
  }
  std::map<std::string, int> hist;
  histogram(g, hist);
  auto bad = onnx_io::unsupported_nodes(g);
  // The families Kestrel fuses, found on a copy rewritten as a session would.
  FamiliesView fam;
  if (bad.empty()) fam = inspect_families(a, g);
  auto ins = infos(g, g.inputs), outs = infos(g, g.outputs);
  std::string summary;
  std::optional<backends::PlacementReport> placement = bad.empty() ? placement_of(a, summary) : std::nullopt;
  if (a.has("--json")) {
    Json j{{"ir_version", m.ir_version}, {"producer", m.producer}};
    Json& opsets = j["opsets"] = Json::object();
    for (auto& [k, v] : m.opsets) opsets[k.empty() ? "ai.onnx" : k] = v;
    for (auto& t : ins) j["inputs"].push_back(to_json(t));
    for (auto& t : outs) j["outputs"].push_back(to_json(t));
    j["nodes"] = g.nodes.size();
    j["initializers"] = g.initializers.size();
    j["ops"] = hist;
    j["unsupported"] = bad;
    j["runnable"] = bad.empty();
    add_families_json(fam, j);
    if (placement) j["placement"] = to_json(*placement);
    std::printf("%s\n", json_line(j).c_str());
    return 0;
  }
  std::printf("model: %s\nIR version %lld, producer '%s'\nopsets:", a.positional[0].c_str(), (long long)m.ir_version,
              m.producer.c_str());
  for (auto& [k, v] : m.opsets) std::printf(" %s=%d", k.empty() ? "ai.onnx" : k.c_str(), v);
  std::printf("\ninputs:\n");
  for (auto& t : ins) std::printf("  %s: %s %s\n", t.name.c_str(), dtype_name(t.dtype), t.shape_str().c_str());
  std::printf("outputs:\n");
  for (auto& t : outs) std::printf("  %s: %s %s\n", t.name.c_str(), dtype_name(t.dtype), t.shape_str().c_str());
  std::printf("%zu nodes, %zu initializers\nops:\n", g.nodes.size(), g.initializers.size());
  for (auto& [k, v] : hist) std::printf("  %-28s %d\n", k.c_str(), v);
  print_families(fam);
  if (bad.empty() && placement) {
    std::printf("placement (%s):\n%s\n",
                placement->ran ? "one run on synthesized inputs" : "static partition, nothing run; --run measures one",
                summary.c_str());
  } else if (bad.empty()) {
    std::printf("every node runs on Kestrel (backend: cpu; --backend vulkan shows the GPU split)\n");
  } else {
    std::printf("%zu node(s) cannot run:\n", bad.size());
    for (auto& b : bad) std::printf("  %s\n", b.c_str());
  }
  return 0;
}

}  // namespace kestrel::cli

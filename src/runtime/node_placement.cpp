#include "runtime/node_placement.h"

#include <map>

#include "backends/backend.h"
#include "backends/vulkan/vulkan_backend.h"
#include "ops/registry.h"
#include "runtime/config.h"
#include "runtime/prepare.h"

namespace kestrel::runtime {
namespace {

// Every node name in a fused node's "original" subgraph, at any depth.
void original_names(const ir::Graph& g, std::vector<std::string>& out) {
  for (const ir::Node& n : g.nodes) {
    out.push_back(n.name);
    if (const ir::Attribute* a = n.attr("original"); a && a->g) original_names(*a->g, out);
  }
}

}  // namespace

GraphPlacement place_nodes(const ir::Graph& g, const SessionOptions& opts) {
  const Config c = configure(opts);
  GraphPlacement out;
  out.vulkan = runs_on_vulkan(c);
  const std::unique_ptr<backends::Backend> backend =
      out.vulkan ? backends::make_vulkan_backend(c.vulkan) : backends::make_cpu_backend(c.cpu_kernels);

  // Nodes the passes leave as they are keep their verdicts from the graph as
  // given; folding and small fusions (an activation into its convolution)
  // move a node's work into another the backend also runs.
  const std::vector<backends::NodeVerdict> as_given = backend->capability(g);
  out.nodes.resize(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    out.nodes[i] = {as_given[i].supported, ops::find_op(n.domain, n.op_type, n.opset) != nullptr, "",
                    as_given[i].reason};
  }

  // The encoders: claimed on a copy as a session claims them; each original
  // node of a fused encoder the backend runs goes with it.
  ir::Graph prepared = g;
  out.families = prepare_graph(prepared, c);
  std::map<std::string, std::string> family_of_fused;
  for (const families::FamilyClaim& claim : out.families.claims) family_of_fused[claim.node] = claim.family;
  const std::vector<backends::NodeVerdict> fused = backend->capability(prepared);
  std::map<std::string, std::string> encoder_of;  // original node -> family
  for (size_t i = 0; i < prepared.nodes.size(); ++i) {
    const ir::Node& n = prepared.nodes[i];
    auto family = family_of_fused.find(n.name);
    if (family == family_of_fused.end() || !fused[i].supported) continue;
    const ir::Attribute* original = n.attr("original");
    if (!original || !original->g) continue;
    std::vector<std::string> names;
    original_names(*original->g, names);
    for (const std::string& name : names) encoder_of[name] = family->second;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto e = encoder_of.find(g.nodes[i].name);
    if (e == encoder_of.end()) continue;
    out.nodes[i] = {true, true, e->second, ""};
  }
  return out;
}

}  // namespace kestrel::runtime

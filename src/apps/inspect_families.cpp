#include "apps/inspect_families.h"

#include "apps/json_report.h"

#include <cstdio>
#include <map>
#include <set>

#include "backends/backend.h"
#include "onnx/loader.h"
#include "runtime/prepare.h"

namespace kestrel::cli {
namespace {

// By node name: a backend may run its own copy of the graph (the CPU's
// fused and packed one, backends/cpu/conv_weight_packing.h), whose nodes keep
// their names but are not the model's. Only the model's names count: a fused
// node's first runs also trace the nodes it replaced (its check).
struct FlopsTally {
  std::map<std::string, double> per_node;
  static void record(void* self, const backends::NodeTiming& t) {
    static_cast<FlopsTally*>(self)->per_node[t.node->name] += backends::node_flops(*t.node, t.input_shapes, t.output_shapes);
  }
};

bool fused(const ir::Node& n) { return n.domain == families::kDomain; }

}  // namespace

FamiliesView inspect_families(const Args& a, const ir::Graph& g) {
  FamiliesView v;
  ir::Graph rewritten = g;
  v.report = runtime::prepare_graph(rewritten, runtime::Config::of(session_options(a)));
  if (v.report.claims.empty()) return v;
  try {
    Args cpu = a;
    cpu.flags.erase("--backend");
    cpu.flags.emplace("--backend", "cpu");
    auto s = Session::load(a.positional[0], session_options(cpu));
    FlopsTally tally;
    s->run_traced(make_inputs(*s, cpu), &FlopsTally::record, &tally);
    v.report = s->families();  // the session's own claims (node names carry its ids)
    const auto& nodes = s->model().graph.nodes;
    bool seen_fused = false;
    for (const families::FamilyClaim& c : v.report.claims) {
      double f = 0;
      for (const ir::Node& n : nodes)
        if (n.name == c.node) f = tally.per_node[n.name];
      v.fused_flops.push_back(f);
    }
    std::set<std::string> counted;
    for (const ir::Node& n : nodes)
      if (counted.insert(n.name).second) v.total_flops += tally.per_node[n.name];
    for (const ir::Node& n : nodes) {
      if (fused(n)) {
        seen_fused = true;
        continue;
      }
      v.outside.push_back({n.name, n.op_type, seen_fused ? "after" : "before"});
    }
    v.measured = true;
  } catch (const std::exception& e) {
    // Symbolic dims default to 1 in the synthesized inputs; an export that
    // baked its traced sizes into Reshapes needs them given.
    v.note = std::string("FLOPs not measured on synthesized inputs (give symbolic dims with --dim SYM=N): ") + e.what();
  }
  return v;
}

void print_families(const FamiliesView& v) {
  for (size_t i = 0; i < v.report.claims.size(); ++i) {
    const families::FamilyClaim& c = v.report.claims[i];
    std::string taps, kinds;
    for (int64_t x : c.taps) taps += (taps.empty() ? "" : ",") + std::to_string(x);
    for (size_t k = 0; k < c.attention.size(); ++k) kinds += (k ? ", " : "") + c.attention[k];
    std::printf("family %s: %lld layers fused into '%s' (width %lld, %lld heads of %lld, MLP %lld, %s%s%s%s%s, "
                "taps after layers %s; replaces %zu nodes)\n",
                c.family.c_str(), (long long)c.layers, c.node.c_str(), (long long)c.width, (long long)c.heads,
                (long long)c.head_dim, (long long)c.mlp_width, c.activation.c_str(), c.pre_norm ? ", pre-norm" : "",
                c.layer_scale ? ", LayerScale" : "", c.class_token ? ", class token" : "",
                c.registers ? (", " + std::to_string(c.registers) + " registers").c_str() : "", taps.c_str(),
                c.replaced_nodes);
    if (!kinds.empty()) std::printf("  attention per layer: %s\n", kinds.c_str());
    if (!c.after.empty()) std::printf("  after it: %s\n", c.after.c_str());
    if (v.measured && v.total_flops > 0)
      std::printf("  %.1f%% of the model's FLOPs inside it (%.3g of %.3g GFLOP, one run on synthesized inputs)\n",
                  100 * v.fused_flops[i] / v.total_flops, v.fused_flops[i] / 1e9, v.total_flops / 1e9);
  }
  if (!v.report.claims.empty() && v.measured) {
    std::map<std::string, std::map<std::string, int>> by_where;
    for (const OutsideNode& o : v.outside) by_where[o.where][o.op]++;
    for (const char* where : {"before", "after"}) {
      if (!by_where.count(where)) continue;
      std::string ops;
      for (auto& [op, n] : by_where[where]) ops += (ops.empty() ? "" : ", ") + op + " x" + std::to_string(n);
      std::printf("  outside it, %s it (not encoder layers): %s\n", where, ops.c_str());
    }
  }
  if (!v.note.empty()) std::printf("  (%s)\n", v.note.c_str());
  for (const auto& u : v.report.unclaimed) std::printf("not fused: %s\n", u.text().c_str());
}

void add_families_json(const FamiliesView& v, Json& j) {
  Json& fams = j["families"] = Json::array();
  for (size_t i = 0; i < v.report.claims.size(); ++i) {
    Json c = to_json(v.report.claims[i]);
    if (v.measured && v.total_flops > 0) c["flops_share"] = v.fused_flops[i] / v.total_flops;
    fams.push_back(c);
  }
  j["unclaimed_encoders"] = Json::array();
  for (const auto& u : v.report.unclaimed) j["unclaimed_encoders"].push_back({{"node", u.node}, {"why", u.why}});
  Json& outside = j["outside_fused"] = Json::array();
  for (const OutsideNode& o : v.outside) outside.push_back({{"node", o.name}, {"op", o.op}, {"where", o.where + "_fused"}});
}

}  // namespace kestrel::cli

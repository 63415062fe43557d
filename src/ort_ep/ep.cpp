#include "ort_ep/ep.h"

#include <map>
#include <set>
#include <unordered_map>

#include "onnx/loader.h"
#include "ort_ep/fused_kernel.h"
#include "ort_ep/graph_model.h"
#include "ort_ep/node_groups.h"
#include "ort_ep/ort_api.h"
#include "runtime/node_placement.h"

namespace kestrel::ort_ep {
namespace {

const OrtApi& ort() { return *api().ort; }

// The ops whose work outweighs a trip to the GPU and back: a group claimed
// for Vulkan holds at least one (or a fused encoder). The rest (shape
// arithmetic, reshapes, element-wise tails) is claimed only beside them,
// where leaving it to ONNX Runtime would add transfers, not save them.
bool heavy(const std::string& op) {
  static const std::set<std::string> ops = {"Conv",         "ConvTranspose", "MatMul",       "Gemm",
                                            "MatMulInteger", "ConvInteger",  "QLinearConv",  "QLinearMatMul",
                                            "Einsum",        "LSTM",         "GRU",          "RNN",
                                            "Attention",     "MultiHeadAttention"};
  return ops.count(op) > 0;
}

// Edges between ONNX Runtime's nodes: who reads what each makes (implicit
// reads of If and Loop bodies included, so no group skips over them).
NodeGraph edges_of(const std::vector<const OrtNode*>& nodes) {
  NodeGraph g;
  g.consumers.resize(nodes.size());
  g.eligible.assign(nodes.size(), false);
  std::unordered_map<std::string, size_t> maker;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& v : value_names(nodes[i], true))
      if (!v.empty()) maker[v] = i;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<std::string> reads = value_names(nodes[i], false);
    for (const OrtValueInfo* x : implicit_inputs(nodes[i])) reads.push_back(name_of(x));
    std::set<size_t> from;
    for (const std::string& r : reads)
      if (auto m = maker.find(r); m != maker.end() && m->second != i) from.insert(m->second);
    for (size_t p : from) g.consumers[p].push_back(i);
  }
  return g;
}

const char* ORT_API_CALL get_name(const OrtEp* self) noexcept { return static_cast<const KestrelEp*>(self)->name.c_str(); }

OrtStatus* ORT_API_CALL get_capability(OrtEp* self, const OrtGraph* graph, OrtEpGraphSupportInfo* support) noexcept {
  KESTREL_ORT_GUARD(
      auto& ep = *static_cast<KestrelEp*>(self);
      // The bodies of If and Loop nodes stay with ONNX Runtime, which runs
      // the node itself.
      const OrtNode* parent = nullptr;
      check(ort().Graph_GetParentNode(graph, &parent), "Graph_GetParentNode");
      if (parent) return nullptr;
      const std::vector<const OrtNode*> nodes = nodes_of(graph);
      if (nodes.empty()) return nullptr;
      const std::vector<std::string> why_not = unconvertible(nodes);
      std::vector<const OrtNode*> shown;
      std::vector<size_t> shown_index;
      for (size_t i = 0; i < nodes.size(); ++i)
        if (why_not[i].empty()) {
          shown.push_back(nodes[i]);
          shown_index.push_back(i);
        }
      if (shown.empty()) return nullptr;

      // Kestrel's own verdicts on the graph as ONNX Runtime holds it.
      runtime::GraphPlacement placement;
      try {
        GraphModel gm = model_of(graph, shown, false);
        onnx_io::Model model = onnx_io::load_model_proto(gm.model, "");
        placement = runtime::place_nodes(model.graph, ep.config.session);
        std::unordered_map<std::string, size_t> at;
        for (size_t i = 0; i < model.graph.nodes.size(); ++i) at[model.graph.nodes[i].name] = i;
        std::vector<runtime::NodePlacement> by_shown(shown.size());
        for (size_t i = 0; i < shown.size(); ++i)
          if (auto a = at.find(gm.node_names[i]); a != at.end()) by_shown[i] = placement.nodes[a->second];
        placement.nodes = std::move(by_shown);
      } catch (const std::exception& e) {
        ep.log(ORT_LOGGING_LEVEL_WARNING, std::string("Kestrel claims nothing in this graph: ") + e.what());
        return nullptr;
      }

      NodeGraph g = edges_of(nodes);
      std::vector<bool> heavy_node(nodes.size(), false);
      std::vector<std::string> encoder_of(nodes.size());
      for (size_t k = 0; k < shown.size(); ++k) {
        const size_t i = shown_index[k];
        const runtime::NodePlacement& p = placement.nodes[k];
        // A node Kestrel runs beside the GPU (an op without a Vulkan kernel)
        // still joins the group around it, as in a Kestrel session: cut out,
        // it would send what flows around it through ONNX Runtime instead
        // (SAM op by op: its attention scores, 800 MB a layer, 0.9x the CPU
        // EP's speed). What makes a group worth claiming is GPU work.
        g.eligible[i] = placement.vulkan ? p.in_session : p.on_backend;
        encoder_of[i] = p.encoder;
        heavy_node[i] = !p.encoder.empty() || (p.on_backend && heavy(op_of(nodes[i])));
      }
      size_t claimed_nodes = 0, claimed_groups = 0;
      std::set<std::string> encoders;
      for (const std::vector<size_t>& group : fusable_groups(g)) {
        // On the GPU a group must carry real work; on the CPU, Kestrel claims
        // only its fused encoders (elsewhere the two CPU EPs are alike).
        bool worth = false;
        for (size_t i : group) worth = worth || (placement.vulkan ? heavy_node[i] : !encoder_of[i].empty());
        if (!worth) continue;
        std::vector<const OrtNode*> members;
        for (size_t i : group) {
          members.push_back(nodes[i]);
          if (!encoder_of[i].empty()) encoders.insert(encoder_of[i]);
        }
        OrtNodeFusionOptions fusion{};
        fusion.ort_version_supported = kOldestApi;
        fusion.drop_constant_initializers = true;  // the compiled session holds its own copy
        check(api().ep->EpGraphSupportInfo_AddNodesToFuse(support, members.data(), members.size(), &fusion),
              "EpGraphSupportInfo_AddNodesToFuse");
        claimed_nodes += members.size();
        ++claimed_groups;
      }
      std::string summary = "Kestrel (" + std::string(placement.vulkan ? "Vulkan" : "CPU") + ") claims " +
                            std::to_string(claimed_nodes) + " of " + std::to_string(nodes.size()) + " nodes in " +
                            std::to_string(claimed_groups) + " fused node(s)";
      for (const std::string& e : encoders) summary += "; a fused " + e + " encoder";
      ep.log(ORT_LOGGING_LEVEL_INFO, summary);)
}

OrtStatus* ORT_API_CALL compile(OrtEp* self, const OrtGraph** graphs, const OrtNode** fused_nodes, size_t count,
                                OrtNodeComputeInfo** infos, OrtNode** ep_context_nodes) noexcept {
  KESTREL_ORT_GUARD(
      auto& ep = *static_cast<KestrelEp*>(self);
      for (size_t i = 0; i < count; ++i) infos[i] = nullptr;
      try {
        for (size_t i = 0; i < count; ++i) {
          GraphModel gm = model_of(graphs[i], nodes_of(graphs[i]), true);
          onnx_io::Model model = onnx_io::load_model_proto(gm.model, "");
          std::unique_ptr<Session> session = Session::load_model(std::move(model), ep.config.session);
          ep.log(ORT_LOGGING_LEVEL_INFO, describe(fused_nodes[i]) + ": " + session->placement_summary());
          infos[i] = new FusedKernel(kOldestApi, std::move(session), value_names(fused_nodes[i], false),
                                     value_names(fused_nodes[i], true));
        }
      } catch (...) {
        for (size_t i = 0; i < count; ++i) delete static_cast<FusedKernel*>(infos[i]), infos[i] = nullptr;
        throw;
      })
}

void ORT_API_CALL release_infos(OrtEp*, OrtNodeComputeInfo** infos, size_t count) noexcept {
  for (size_t i = 0; i < count; ++i) delete static_cast<FusedKernel*>(infos[i]);
}

}  // namespace

KestrelEp::KestrelEp(std::string n, EpConfig c, const OrtLogger* l)
    : OrtEp{}, name(std::move(n)), config(std::move(c)), logger(l) {
  ort_version_supported = kOldestApi;  // the callbacks below are ONNX Runtime 1.23's; the rest stay null
  GetName = get_name;
  GetCapability = get_capability;
  Compile = compile;
  ReleaseNodeComputeInfos = release_infos;
}

void KestrelEp::log(OrtLoggingLevel level, const std::string& message) const {
  if (!logger) return;
  if (OrtStatus* s = ort().Logger_LogMessage(logger, level, message.c_str(), __FILE__, __LINE__, "Kestrel"))
    ort().ReleaseStatus(s);
}

}  // namespace kestrel::ort_ep

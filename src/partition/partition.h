// Where each node of a graph runs, and why: the partition stage, for any
// backend that splits a graph between itself and the CPU.
//
// Two stages. The static partition is decided once, when the graph is
// compiled, from the graph alone: the backend's rules give each node its
// kernel, or the reason it has none that can take the node (no kernel, a
// dtype the device does not store, a kernel's own attribute check, float32
// only under float16 storage: backends/vulkan/partition.cpp). It is reported
// without running the model (`kestrel inspect --backend vulkan`).
//
// What only a run can tell is learned by a run at each input-shape
// signature and kept (bounded, signature_cache.h): shape arithmetic on small
// tensors already on the host stays there, and a kernel may refuse the
// shapes it meets (a tensor past maxStorageBufferRange, a layout it does not
// cover). Later runs at that signature follow the learned verdicts: a node
// learned to stay on the CPU is not tried again, and a graph learned to run
// wholly on the CPU goes straight to the CPU executor. A verdict that depends
// on the moment rather than the shapes (the memory budget was full, a
// pipeline failed to build, a fused encoder's first run at a shape is checked
// on the CPU) keeps the whole run from teaching: where that node runs next
// time moves its readers' inputs between host and device, and with them
// their verdicts; the next run at that signature is asked again.
// Verdicts are about speed, never about results: every placement computes the
// same answer, and a node learned for the backend that refuses this time
// still falls back to the CPU.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "partition/placement_report.h"
#include "partition/signature_cache.h"

namespace kestrel::partition {

// What the first run at a signature found for one node.
enum class Learned : uint8_t {
  Gpu,    // ran on the backend's device: try it there
  Cpu,    // stayed on the CPU for a reason of its shapes: run it there at once
  Retry,  // stayed on the CPU for a passing reason: the run teaches nothing (never kept)
};

// The verdicts of one signature: per node, with why the CPU ones stayed.
struct Verdicts {
  std::vector<Learned> node;
  std::vector<std::string> why;  // for Cpu nodes
  bool all_cpu() const {
    return std::none_of(node.begin(), node.end(), [](Learned l) { return l != Learned::Cpu; });
  }
};

// Kernel: the backend's kernel definition (vulkan::VkOpDef).
template <typename Kernel>
class Partition {
 public:
  using Verdicts = partition::Verdicts;

  // decide(node) -> {the node's kernel, or null with why it has none}.
  template <typename Decide>
  Partition(const ir::Graph& g, Decide decide) : kernel_(g.nodes.size()), reason_(g.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      auto [kernel, why] = decide(g.nodes[i]);
      reason_[i] = kernel ? "" : std::move(why);
      kernel_[i] = kernel;
    }
  }

  // The node's kernel, or null with static_reason(i).
  const Kernel* kernel(size_t i) const { return kernel_[i]; }
  const std::string& static_reason(size_t i) const { return reason_[i]; }
  size_t size() const { return kernel_.size(); }

  // The static partition as a report: node counts and why nodes stay on the
  // CPU, before any run (no FLOPs: those need shapes).
  PlacementReport planned(const std::string& device) const {
    PlacementReport r;
    r.device = device;
    r.ran = false;
    for (size_t i = 0; i < size(); ++i) {
      if (kernel_[i]) {
        ++r.gpu_nodes;
      } else {
        ++r.cpu_nodes;
        ++r.cpu_reasons[reason_[i]];
      }
    }
    return r;
  }

  std::shared_ptr<const Verdicts> learned(const Signature& sig) const { return learned_.find(sig); }
  void learn(Signature sig, Verdicts v) const { learned_.add(std::move(sig), std::move(v)); }
  size_t learned_signatures() const { return learned_.size(); }

 private:
  std::vector<const Kernel*> kernel_;
  std::vector<std::string> reason_;
  mutable SignatureCache<Verdicts> learned_;
};

}  // namespace kestrel::partition

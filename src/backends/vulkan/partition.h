// Where each node of a graph runs on the Vulkan backend, and why.
//
// Two stages. The static partition is decided once, when the graph is
// compiled, from the graph alone: an op without a Vulkan kernel, a dtype the
// device does not store, a kernel's own attribute check, float32-only kernels
// under float16 storage. `kestrel inspect --backend vulkan` reports it without
// running the model.
//
// What only a run can tell is learned by a run at each input-shape
// signature and kept (bounded, backends/signature_cache.h): shape arithmetic
// on small tensors already on the host stays there, and a kernel may refuse
// the shapes it meets (a tensor past maxStorageBufferRange, a layout it does
// not cover). Later runs at that signature follow the learned verdicts: a
// node learned to stay on the CPU is not tried again, and a graph learned to
// run wholly on the CPU goes straight to the CPU executor. A verdict that
// depends on the moment rather than the shapes (the memory budget was full, a
// pipeline failed to build, a fused encoder's first run at a shape is checked
// on the CPU) keeps the whole run from teaching: where that node runs next
// time moves its readers' inputs between host and device, and with them
// their verdicts; the next run at that signature is asked again.
// Verdicts are about speed, never about results: every placement computes the
// same answer, and a node learned for the GPU that refuses this time still
// falls back to the CPU.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/signature_cache.h"
#include "backends/vulkan/op.h"

namespace kestrel::vulkan {

// Why a node with a Vulkan kernel still ran on the host.
extern const std::string kSmallHostWork;

// What the first run at a signature found for one node.
enum class Learned : uint8_t {
  Gpu,    // ran on the GPU: try it there
  Cpu,    // stayed on the CPU for a reason of its shapes: run it there at once
  Retry,  // stayed on the CPU for a passing reason: the run teaches nothing (never kept)
};

class Partition {
 public:
  Partition(const ir::Graph& g, bool half);

  // The node's Vulkan kernel, or null with static_reason(i).
  const VkOpDef* kernel(size_t i) const { return kernel_[i]; }
  const std::string& static_reason(size_t i) const { return reason_[i]; }
  size_t size() const { return kernel_.size(); }

  // The static partition as a report: node counts and why nodes stay on the
  // CPU, before any run (no FLOPs: those need shapes).
  backends::PlacementReport planned(const std::string& device) const;

  // The verdicts of one signature: per node, with why the CPU ones stayed.
  struct Verdicts {
    std::vector<Learned> node;
    std::vector<std::string> why;  // for Cpu nodes
    bool all_cpu() const;
  };
  std::shared_ptr<const Verdicts> learned(const backends::Signature& sig) const { return learned_.find(sig); }
  void learn(backends::Signature sig, Verdicts v) const { learned_.add(std::move(sig), std::move(v)); }
  size_t learned_signatures() const { return learned_.size(); }

 private:
  std::vector<const VkOpDef*> kernel_;
  std::vector<std::string> reason_;
  mutable backends::SignatureCache<Verdicts> learned_;
};

// Shape arithmetic on small host tensors stays on the host: a node whose
// every input is on the host and at most this many elements.
constexpr int64_t kSmallHostElements = 4096;

}  // namespace kestrel::vulkan

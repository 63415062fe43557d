#include "backends/vulkan/partition.h"

#include <algorithm>

#include "backends/vulkan/transfer.h"

namespace kestrel::vulkan {

const std::string kSmallHostWork = "small tensors already on the host";

namespace {

// The reason node n, whose Vulkan kernel is d (null: none), cannot go to the
// GPU at all ("" when it can).
std::string static_verdict(const ir::Node& n, const VkOpDef* d, const ir::Graph& g, bool half) {
  if (!d) return "no Vulkan kernel for " + (n.domain.empty() ? "" : n.domain + ".") + n.op_type;
  if (half && !d->half_ok) return n.op_type + " runs in float32 only";
  for (int v : n.outputs)
    if (v >= 0 && g.values[size_t(v)].dtype != DType::Undefined && !device_dtype(g.values[size_t(v)].dtype))
      return std::string("output dtype ") + dtype_name(g.values[size_t(v)].dtype) + " stays on the CPU";
  if (d->check) return d->check(n, g);
  return "";
}

}  // namespace

Partition::Partition(const ir::Graph& g, bool half) : kernel_(g.nodes.size()), reason_(g.nodes.size()) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    const VkOpDef* d = find_vk_op(n.domain, n.op_type, n.opset);
    reason_[i] = static_verdict(n, d, g, half);
    if (reason_[i].empty()) kernel_[i] = d;
  }
}

backends::PlacementReport Partition::planned(const std::string& device) const {
  backends::PlacementReport r;
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

bool Partition::Verdicts::all_cpu() const {
  return std::none_of(node.begin(), node.end(), [](Learned l) { return l != Learned::Cpu; });
}

}  // namespace kestrel::vulkan

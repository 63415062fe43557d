#include "backends/vulkan/partition.h"

#include <utility>

#include "backends/vulkan/transfer.h"

namespace kestrel::vulkan {

const std::string kSmallHostWork = "small tensors already on the host";

namespace {

// The reason node n, whose Vulkan kernel is d (null: none), cannot go to the
// GPU at all ("" when it can).
std::string static_verdict(const ir::Node& n, const VkOpDef* d, const ir::Graph& g) {
  if (!d) return "no Vulkan kernel for " + (n.domain.empty() ? "" : n.domain + ".") + n.op_type;
  for (int v : n.outputs)
    if (v >= 0 && g.values[size_t(v)].dtype != DType::Undefined && !device_dtype(g.values[size_t(v)].dtype))
      return std::string("output dtype ") + dtype_name(g.values[size_t(v)].dtype) + " stays on the CPU";
  if (d->check) return d->check(n, g);
  return "";
}

}  // namespace

Partition::Partition(const ir::Graph& g)
    : partition::Partition<VkOpDef>(g, [&](const ir::Node& n) {
        const VkOpDef* d = find_vk_op(n.domain, n.op_type, n.opset);
        std::string why = static_verdict(n, d, g);
        return std::pair<const VkOpDef*, std::string>(why.empty() ? d : nullptr, std::move(why));
      }) {}

}  // namespace kestrel::vulkan

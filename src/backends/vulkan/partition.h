// The Vulkan backend's partition rules (the stage itself is
// partition/partition.h): which nodes a Vulkan kernel can take, decided from
// the graph at compile, and which small host work stays on the host.
#pragma once
#include <cstdint>
#include <string>

#include "backends/vulkan/op.h"
#include "partition/partition.h"

namespace kestrel::vulkan {

using partition::Learned;

// Why a node with a Vulkan kernel still ran on the host.
extern const std::string kSmallHostWork;

// The static partition for the Vulkan kernels: a node gets its kernel unless
// it has none, its output's dtype is one the device does not store, or the
// kernel's own attribute check refuses it. (A kernel that computes in
// float32 only takes its node in float32 under float16 storage too:
// precision_plan.h.)
class Partition : public partition::Partition<VkOpDef> {
 public:
  explicit Partition(const ir::Graph& g);
};

// Shape arithmetic on small host tensors stays on the host: a node whose
// every input is on the host and at most this many elements.
constexpr int64_t kSmallHostElements = 4096;

}  // namespace kestrel::vulkan

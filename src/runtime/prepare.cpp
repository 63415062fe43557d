#include "runtime/prepare.h"

#include "backends/vulkan/vulkan_backend.h"
#include "passes/passes.h"

namespace kestrel::runtime {

bool runs_on_vulkan(const Config& c) {
  return c.backend == BackendChoice::Vulkan ||
         (c.backend == BackendChoice::Auto && backends::gpu_vulkan_device_present());
}

families::ClaimReport prepare_graph(ir::Graph& g, const Config& c) {
  // Only a graph with quantizers asks which backend runs it: the question
  // may start a Vulkan instance, which the rest need not pay for.
  bool quantized = false;
  for (const ir::Node& n : g.nodes)
    quantized |= (n.op_type == "DequantizeLinear" || n.op_type == "DynamicQuantizeLinear") && n.domain.empty();
  passes::run_default_passes(g, {.integer_qdq = quantized && !runs_on_vulkan(c)});
  return families::claim_families(g, c.claims);
}

}  // namespace kestrel::runtime

#include "runtime/prepare.h"

#include "backends/vulkan/vulkan_backend.h"
#include "passes/passes.h"

namespace kestrel::runtime {

bool runs_on_vulkan(const Config& c) {
  return c.backend == BackendChoice::Vulkan ||
         (c.backend == BackendChoice::Auto && backends::gpu_vulkan_device_present());
}

families::ClaimReport prepare_graph(ir::Graph& g, const Config& c) {
  passes::run_default_passes(g, {.integer_qdq = !runs_on_vulkan(c)});
  return families::claim_families(g, c.claims);
}

}  // namespace kestrel::runtime

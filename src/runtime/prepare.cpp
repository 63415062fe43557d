#include "runtime/prepare.h"

#include "backends/vulkan/vulkan_backend.h"
#include "passes/passes.h"

namespace kestrel::runtime {

bool runs_on_vulkan(const Config& c) {
  return c.backend == BackendChoice::Vulkan ||
         (c.backend == BackendChoice::Auto && backends::gpu_vulkan_device_present());
}

families::ClaimReport prepare_graph(ir::Graph& g, const Config& c) {
  // A QDQ graph's quantized products become integer ones on every backend
  // (the Vulkan backend has each op the fusions write: QLinearConv with its
  // activation, QLinearMatMul, MatMulIntegerToFloat, DynamicQuantizeMatMul,
  // QdqAdd).
  bool quantized = false;
  for (const ir::Node& n : g.nodes)
    quantized |= (n.op_type == "DequantizeLinear" || n.op_type == "DynamicQuantizeLinear") && n.domain.empty();
  passes::run_default_passes(g, {.integer_qdq = quantized});
  return families::claim_families(g, c.claims);
}

}  // namespace kestrel::runtime

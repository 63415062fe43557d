// Precision "auto" on a GPU with float16 storage: the graph is compiled in
// float32 and in float16 storage (per node, precision_plan.h); the first run
// computes in float32 and calibrates the float16 graph. Float16 is kept only
// if some node keeps it, every float output of a mixed run agrees with
// float32 (cosine >= 0.9995 and max abs error <= 3% of the output's largest
// magnitude) and a warm run of each shows it faster (on a datacenter GPU
// float32 often is: the models are not bound by memory bandwidth there).
// Later runs use the one kept.
#pragma once
#include <memory>
#include <mutex>

#include "backends/backend.h"
#include "backends/vulkan/graph_runner.h"

namespace kestrel::vulkan {

class AutoPrecisionCompiled : public backends::CompiledGraph {
 public:
  AutoPrecisionCompiled(std::unique_ptr<backends::CompiledGraph> fp32, std::unique_ptr<VulkanCompiled> fp16);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const backends::RunOptions& opts) const override;
  std::optional<backends::PlacementReport> placement() const override;
  std::optional<backends::PlacementReport> planned_placement() const override;

 private:
  mutable std::mutex mu_;
  mutable std::unique_ptr<backends::CompiledGraph> fp32_;
  mutable std::unique_ptr<VulkanCompiled> fp16_;
  mutable const backends::CompiledGraph* chosen_ = nullptr;
  mutable std::string verdict_;
};

}  // namespace kestrel::vulkan

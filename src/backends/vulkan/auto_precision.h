// Precision "auto" on a GPU with float16 storage: the graph is compiled in
// both precisions; the first run computes in both and compares. float16 is
// kept only if every float output agrees with float32 (cosine >= 0.9995 and
// max abs error <= 3% of the output's largest magnitude: the float16 bounds
// Kestrel's real-model tests assert) and a second, warm run of each shows it
// faster (on a datacenter GPU float32 often is: the models are not bound by
// memory bandwidth there). Later runs use the one kept.
#pragma once
#include <memory>
#include <mutex>

#include "backends/backend.h"

namespace kestrel::vulkan {

class AutoPrecisionCompiled : public backends::CompiledGraph {
 public:
  AutoPrecisionCompiled(std::unique_ptr<backends::CompiledGraph> fp32, std::unique_ptr<backends::CompiledGraph> fp16);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const backends::RunOptions& opts) const override;
  std::optional<backends::PlacementReport> placement() const override;
  std::optional<backends::PlacementReport> planned_placement() const override;

 private:
  mutable std::mutex mu_;
  mutable std::unique_ptr<backends::CompiledGraph> fp32_, fp16_;
  mutable const backends::CompiledGraph* chosen_ = nullptr;
  mutable std::string verdict_;
};

}  // namespace kestrel::vulkan

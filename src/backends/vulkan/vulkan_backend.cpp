#include "backends/vulkan/vulkan_backend.h"

#include <mutex>

#include "backends/vulkan/auto_precision.h"
#include "backends/vulkan/graph_runner.h"

namespace kestrel::backends {
namespace {

class VulkanBackend : public Backend {
 public:
  // auto_half: compile both precisions and let the first run choose.
  VulkanBackend(std::shared_ptr<vulkan::Context> ctx, bool half, bool auto_half, const VulkanOptions& opts)
      : ctx_(std::move(ctx)), half_(half), auto_half_(auto_half), opts_(opts) {}
  std::string name() const override { return "vulkan"; }
  std::vector<NodeVerdict> capability(const ir::Graph& g) const override {
    const vulkan::Partition p(g);  // the static partition a compiled graph starts from
    std::vector<NodeVerdict> v;
    for (size_t i = 0; i < p.size(); ++i) v.push_back({p.kernel(i) != nullptr, p.static_reason(i)});
    return v;
  }
  std::unique_ptr<CompiledGraph> compile(const ir::Graph& g) const override {
    if (auto_half_) {
      // Both precisions' weights count against one budget.
      auto budget = std::make_shared<vulkan::MemoryBudget>(opts_.device_memory_bytes);
      return std::make_unique<vulkan::AutoPrecisionCompiled>(
          std::make_unique<vulkan::VulkanCompiled>(ctx_, g, false, opts_, budget),
          std::make_unique<vulkan::VulkanCompiled>(ctx_, g, true, opts_, budget));
    }
    return std::make_unique<vulkan::VulkanCompiled>(ctx_, g, half_, opts_);
  }

 private:
  std::shared_ptr<vulkan::Context> ctx_;
  bool half_;
  bool auto_half_;
  VulkanOptions opts_;
};

}  // namespace

std::unique_ptr<Backend> make_vulkan_backend(const VulkanOptions& opts) {
  const Precision precision = opts.precision;
  // One open device per process, shared by every session while any is alive.
  static std::mutex mu;
  static std::weak_ptr<vulkan::Context> shared;
  std::shared_ptr<vulkan::Context> ctx;
  {
    std::lock_guard<std::mutex> lock(mu);
    ctx = shared.lock();
    if (!ctx) shared = ctx = vulkan::Context::open(opts.device);
  }
  bool half = false, auto_half = false;
  if (precision == Precision::Fp16) {
    KESTREL_CHECK(ctx->fp16_storage(), "precision fp16: Vulkan device '", ctx->info().name,
                  "' lacks 16-bit storage buffers or float16 shader types; use fp32");
    half = true;
  } else if (precision == Precision::Fp32) {
    half = false;
  } else {
    // float16 storage only pays on a GPU; whether it stays faithful is model
    // dependent, so the first run decides (auto_precision.h).
    auto_half = ctx->fp16_storage() && ctx->info().type != "cpu";
  }
  return std::make_unique<VulkanBackend>(std::move(ctx), half, auto_half, opts);
}

bool gpu_vulkan_device_present() {
  // Asked at every session load with backend "auto"; the devices do not change while the process runs.
  static const bool present = [] {
    try {
      for (const vulkan::DeviceInfo& d : vulkan::enumerate_devices())
        if (d.type != "cpu") return true;
    } catch (const Error&) {
    }
    return false;
  }();
  return present;
}

}  // namespace kestrel::backends

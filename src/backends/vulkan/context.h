// A Vulkan device opened for compute: one queue (a compute-only family when
// the device has one), the 16/8-bit storage features it offers, and compute
// pipelines built once and kept, backed by a VkPipelineCache persisted under
// $XDG_CACHE_HOME/kestrel/ (keyed on device UUID, driver version and a hash of
// every shader), so a second process skips shader compilation.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/vulkan/device.h"

namespace kestrel::vulkan {

// Every pipeline has room for this many bytes of push constants (the
// minimum maxPushConstantsSize the Vulkan spec guarantees).
constexpr uint32_t kPushBytes = 128;

struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t bindings = 0;
};

class Context {
 public:
  // Opens the device pick_device() chooses. Throws Error with the reason.
  static std::shared_ptr<Context> open();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const { return info_; }
  VkDevice device() const { return device_; }
  uint32_t queue_family() const { return queue_family_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memory_; }
  bool fp16_storage() const { return fp16_enabled_; }

  // The pipeline for shader `name` (float32 or float16 storage variant) with
  // these specialization constants (ids 0..n-1) and `bindings` storage buffers.
  const Pipeline& pipeline(const std::string& name, bool f16, const std::vector<int32_t>& spec, uint32_t bindings);
  size_t pipelines_built() const;
  std::string pipeline_cache_path() const { return cache_path_; }

  // Submits `cmd`, signalling `fence` when done. Queue access is serialized here.
  void submit(VkCommandBuffer cmd, VkFence fence);
  // Waits for `fence` (then resets it). Throws on device loss or when the
  // work has not finished after `timeout_s` seconds.
  void wait(VkFence fence, double timeout_s = 120);

 private:
  Context() = default;
  void load_pipeline_cache();
  void save_pipeline_cache();

  DeviceInfo info_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkPhysicalDeviceMemoryProperties memory_{};
  bool fp16_enabled_ = false;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::string cache_path_;
  size_t cache_loaded_bytes_ = 0;
  mutable std::mutex pipelines_mu_;
  std::map<std::string, Pipeline> pipelines_;
  std::map<uint32_t, VkDescriptorSetLayout> set_layouts_;
  std::map<uint32_t, VkPipelineLayout> layouts_;
  std::mutex queue_mu_;
};

// 2-D grid for `groups` workgroups when one dimension is capped at `max_x`:
// {x, y} with x * y >= groups. Shaders fold the index as x + y * width.
void grid_for(uint64_t groups, uint32_t max_x, uint32_t& x, uint32_t& y);

}  // namespace kestrel::vulkan

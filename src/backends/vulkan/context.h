// A Vulkan device opened for compute: one queue (a compute-only family when
// the device has one), the 16/8-bit storage features it offers, and compute
// pipelines built once and kept, backed by a VkPipelineCache persisted in a
// folder (runtime::Config: $XDG_CACHE_HOME/kestrel/; keyed on device UUID,
// driver version and a hash of every shader), so a second process skips
// shader compilation.
#pragma once
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/vulkan/device.h"
#include "backends/vulkan/attention_kernel.h"
#include "backends/vulkan/gemm_tiles.h"
#include "core/error.h"

namespace kestrel::vulkan {

// Every pipeline has room for this many bytes of push constants (the
// minimum maxPushConstantsSize the Vulkan spec guarantees).
constexpr uint32_t kPushBytes = 128;

// Failures a driver can answer with, injected by tests (Context::inject) to
// show that Kestrel falls back or fails cleanly on each.
enum class Fault {
  OutOfDeviceMemory,  // vkAllocateMemory: VK_ERROR_OUT_OF_DEVICE_MEMORY
  DeviceLost,         // vkQueueSubmit: VK_ERROR_DEVICE_LOST
  PipelineBuild,      // vkCreateComputePipelines fails
  kCount
};

// The device was lost (a driver reset or hang): nothing more runs on it.
struct DeviceLost : Error {
  using Error::Error;
};
// A compute pipeline could not be built: the node it was for runs on the CPU.
struct PipelineFailed : Error {
  using Error::Error;
};

struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t bindings = 0;
  std::string shader;  // its shader's name, for the per-kernel device-time profile
};

// How to open the device (runtime::Config builds it from the environment).
struct DeviceOptions {
  std::string device;              // pick_device's selector: an index or a name; "": the best score
  std::string pipeline_cache_dir;  // where the pipeline cache file lives; "": none is kept
  // float16 GEMMs on tensor cores (VK_KHR_cooperative_matrix, gemm_coop.comp)
  // where the device offers what that kernel needs (KESTREL_COOPMAT=off: never).
  bool coop_matrix = true;
};


class Context {
 public:
  // Opens the device pick_device() chooses. Throws Error with the reason.
  static std::shared_ptr<Context> open(const DeviceOptions& opts = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const { return info_; }
  VkDevice device() const { return device_; }
  uint32_t queue_family() const { return queue_family_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memory_; }
  bool fp16_storage() const { return fp16_enabled_; }
  // Nanoseconds per timestamp tick; 0 when the queue cannot write timestamps
  // from compute work (the profile of kernels is then not kept).
  double timestamp_period_ns() const { return timestamp_period_ns_; }

  // The pipeline for shader `name` (float32 or float16 storage variant) with
  // these specialization constants (ids 0..n-1) and `bindings` storage buffers.
  const Pipeline& pipeline(const std::string& name, bool f16, const std::vector<int32_t>& spec, uint32_t bindings);
  size_t pipelines_built() const;
  std::string pipeline_cache_path() const { return cache_path_; }

  // Submits `cmd`, signalling `fence` when done, and returns the submit's
  // serial number (1, 2, ... in queue order). Queue access is serialized here.
  uint64_t submit(VkCommandBuffer cmd, VkFence fence);
  // Waits for `fence`, signalled by submit number `serial` (then resets it).
  // Throws on device loss or when the work has not finished after
  // `timeout_s` seconds; the work may then still be running.
  void wait(VkFence fence, uint64_t serial, double timeout_s);
  // True once submit `serial` and every submit before it have finished.
  bool finished(uint64_t serial) const;

  // Keeps `keep` (memory, command buffers, descriptor pools) alive until every
  // submit made so far has finished, for whatever a failed wait or an error
  // left in flight: memory is never freed while the device may still write
  // it. Freed at once when the device has nothing outstanding.
  void retire(std::shared_ptr<void> keep);
  size_t retired_count() const;  // held by retire() and not yet freed
  bool lost() const { return lost_; }

  // Test hook: the next `times` times Kestrel reaches the point of `f`, it
  // fails there as the driver would.
  void inject(Fault f, int times = 1) { injected_[int(f)] = times; }
  // True (and one fewer left) when a failure of `f` is injected here.
  bool inject_fault(Fault f) {
    std::atomic<int>& n = injected_[int(f)];
    for (int k = n.load(); k > 0;)
      if (n.compare_exchange_weak(k, k - 1)) return true;
    return false;
  }

 private:
  Context() = default;
  [[noreturn]] void device_lost();  // marks the device lost and throws DeviceLost
  void load_pipeline_cache();
  void save_pipeline_cache();

  DeviceInfo info_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkPhysicalDeviceMemoryProperties memory_{};
  bool fp16_enabled_ = false;
  double timestamp_period_ns_ = 0;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::string cache_dir_, cache_path_;
  size_t cache_loaded_bytes_ = 0;
  mutable std::mutex pipelines_mu_;
  std::map<std::string, Pipeline> pipelines_;
  std::map<uint32_t, VkDescriptorSetLayout> set_layouts_;
  std::map<uint32_t, VkPipelineLayout> layouts_;
  std::mutex queue_mu_;
  // A fence signal covers its own submit and every earlier one on the queue,
  // so one counter tells what has finished.
  uint64_t submitted_ = 0;  // guarded by queue_mu_
  std::atomic<bool> lost_{false};
  std::atomic<int> injected_[int(Fault::kCount)] = {};
  mutable std::mutex retired_mu_;
  uint64_t completed_ = 0;  // the highest serial seen finished; guarded by retired_mu_
  std::vector<std::pair<uint64_t, std::shared_ptr<void>>> retired_;  // (serial to wait for, what it keeps)
};

// 2-D grid for `groups` workgroups when one dimension is capped at `max_x`:
// {x, y} with x * y >= groups. Shaders fold the index as x + y * width.
void grid_for(uint64_t groups, uint32_t max_x, uint32_t& x, uint32_t& y);

}  // namespace kestrel::vulkan

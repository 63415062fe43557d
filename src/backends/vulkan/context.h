// A Vulkan device opened for compute: one queue (a compute-only family when
// the device has one), buffers, and synchronous dispatch of SPIR-V compute
// shaders. The first layer of the Vulkan backend; memory is host-visible and
// one allocation per buffer for now (sub-allocation and staging for discrete
// GPUs come with the backend proper).
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/vulkan/device.h"

namespace kestrel::vulkan {

struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;  // persistently mapped
  size_t size = 0;
};

// A compute shader with its SPIR-V and one int specialization constant (id 0).
struct Kernel {
  const uint32_t* spirv = nullptr;
  size_t spirv_bytes = 0;
  int32_t spec0 = 0;
};

class Context {
 public:
  // Opens the device pick_device() chooses. Throws Error with the reason.
  static std::unique_ptr<Context> open();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const { return info_; }
  Buffer create_buffer(size_t bytes);
  void destroy(Buffer& b);
  // Runs `k` over `elements` invocations (workgroups of `local_size`, folded
  // into a 2-D grid past maxComputeWorkGroupCount[0]) with buffers bound at
  // bindings 0..n-1 and `push` as push constants; waits for completion.
  void run(const Kernel& k, const std::vector<const Buffer*>& buffers, const void* push, uint32_t push_bytes,
           uint64_t elements, uint32_t local_size);

 private:
  Context() = default;
  DeviceInfo info_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
};

// 2-D grid for `groups` workgroups when one dimension is capped at `max_x`:
// {x, y} with x * y >= groups. Shaders fold the index as x + y * width.
void grid_for(uint64_t groups, uint32_t max_x, uint32_t& x, uint32_t& y);

}  // namespace kestrel::vulkan

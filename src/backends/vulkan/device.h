// Vulkan devices: what each one offers and which one Kestrel picks.
// Candidates are scored (discrete > integrated > virtual > CPU, then memory);
// KESTREL_VK_DEVICE=<index or name substring> overrides the choice.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kestrel::vulkan {

struct MemoryHeap {
  uint64_t size = 0;
  bool device_local = false;
  bool host_visible = false;  // some memory type of this heap is mappable
};

struct DeviceInfo {
  uint32_t index = 0;  // in vkEnumeratePhysicalDevices order
  std::string name, type, driver_name, driver_info;
  std::string api_version, driver_version, device_uuid;
  uint32_t vendor_id = 0, device_id = 0;
  std::vector<MemoryHeap> heaps;
  // Not a discrete GPU, and every device-local heap is host-visible (mobile
  // SoCs, CPU implementations): tensors are mapped, no staging copies.
  bool unified_memory = false;
  uint32_t subgroup_size = 0;
  bool subgroup_arithmetic = false;  // subgroupAdd and subgroupMax in compute shaders (the row shaders' sg variants)
  bool shader_float16 = false, shader_int8 = false;
  bool storage_16bit = false, storage_8bit = false;
  // VK_KHR_shader_integer_dot_product: int8 dot products in shaders, and
  // whether the driver reports the packed signed 4x8-bit form as faster than
  // the same arithmetic spelled out (what a quantized kernel on it gains).
  bool integer_dot_product = false, integer_dot_product_accelerated = false;
  bool cooperative_matrix_khr = false, cooperative_matrix_nv = false;
  // The device's compute units (NVIDIA's SMs, AMD's CUs) where its driver
  // reports them (VK_NV_shader_sm_builtins, VK_AMD_shader_core_properties);
  // 0: not reported (kestrel probe).
  uint32_t compute_units = 0;
  bool vulkan_memory_model = false;  // the feature cooperative-matrix shaders declare
  // Every product VK_KHR_cooperative_matrix offers, as "MxNxK A*B+C=R scope"
  // (kestrel probe).
  std::vector<std::string> coop_matrix_shapes;
  // VK_KHR_cooperative_matrix offers 16x16x16 float16 products accumulated in
  // float32 per subgroup of 32, which gemm_coop.comp is written for (float16
  // runs); a context keeps it set only when it enabled the extension
  // (DeviceOptions::coop_matrix).
  bool coop_matrix_fp16 = false;
  // And 16x16x32 int8 x int8 products accumulated in int32 per subgroup of
  // 32 (gemm_integer_coop.comp: exact integer products in every run), with
  // the int8 arithmetic type the shader declares; kept by a context likewise.
  bool coop_matrix_int8 = false;
  bool has_compute_only_queue = false;
  uint32_t max_workgroup_count[3] = {0, 0, 0};
  uint32_t max_workgroup_size[3] = {0, 0, 0};
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_shared_memory = 0;
  uint64_t max_storage_buffer_range = 0;
  uint64_t min_storage_buffer_offset_alignment = 256;
  int score = 0;  // higher is preferred
};

// The process's Vulkan instance (created on first use). Throws Error when no
// Vulkan loader or driver can create one.
VkInstance shared_instance();

// Every Vulkan device the loader finds. Throws Error if no Vulkan loader or
// instance can be created; an empty list means a loader but no device.
std::vector<DeviceInfo> enumerate_devices();

// The index (into enumerate_devices()) Kestrel would use: the one `selector`
// names when it is not empty (an index, or a case-insensitive substring of
// the name; runtime::Config takes it from KESTREL_VK_DEVICE), else the best
// score. Throws Error naming the devices when the selector matches none or
// when there is no device.
size_t pick_device(const std::vector<DeviceInfo>& devices, const std::string& selector = "");

}  // namespace kestrel::vulkan

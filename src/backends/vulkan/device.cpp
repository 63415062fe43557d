#include "backends/vulkan/device.h"

#include <vulkan/vulkan.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/vulkan/coop_matrix_khr.h"
#include "core/error.h"

namespace kestrel::vulkan {
namespace {

std::string version_str(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

int type_score(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4000;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3000;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2000;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1000;
    default: return 0;
  }
}

bool has_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  for (const auto& e : ext)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

}  // namespace

// One instance for the process: creating instances is slow and the loader keeps global state.
VkInstance shared_instance() {
  static VkInstance inst = [] {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "kestrel";
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    VkInstance i = VK_NULL_HANDLE;
    VkResult r = vkCreateInstance(&ci, nullptr, &i);
    if (r != VK_SUCCESS)
      fail("cannot create a Vulkan instance (VkResult ", int(r),
           "): is a Vulkan driver installed? (Debian: mesa-vulkan-drivers for the CPU driver lavapipe)");
    return i;
  }();
  return inst;
}

namespace {

const char* component_name(VkComponentTypeKHR t) {
  switch (t) {
    case VK_COMPONENT_TYPE_FLOAT16_KHR: return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_KHR: return "f32";
    case VK_COMPONENT_TYPE_FLOAT64_KHR: return "f64";
    case VK_COMPONENT_TYPE_SINT8_KHR: return "s8";
    case VK_COMPONENT_TYPE_SINT16_KHR: return "s16";
    case VK_COMPONENT_TYPE_SINT32_KHR: return "s32";
    case VK_COMPONENT_TYPE_SINT64_KHR: return "s64";
    case VK_COMPONENT_TYPE_UINT8_KHR: return "u8";
    case VK_COMPONENT_TYPE_UINT16_KHR: return "u16";
    case VK_COMPONENT_TYPE_UINT32_KHR: return "u32";
    case VK_COMPONENT_TYPE_UINT64_KHR: return "u64";
    default: return "other";
  }
}

// The cooperative-matrix products the driver offers (the extension's entry
// point comes through the instance: the loader need not export it); sets
// d.coop_matrix_fp16 when a subgroup-scope 16x16x16 float16 x float16 +
// float32 is among them, d.coop_matrix_int8 when a 16x16x32 int8 x int8 +
// int32 one is.
void describe_coop_matrices(VkPhysicalDevice pd, DeviceInfo& d) {
  auto props_of = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
      vkGetInstanceProcAddr(shared_instance(), "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  if (!props_of) return;
  uint32_t n = 0;
  if (props_of(pd, &n, nullptr) != VK_SUCCESS || n == 0) return;
  VkCooperativeMatrixPropertiesKHR blank{};
  blank.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
  std::vector<VkCooperativeMatrixPropertiesKHR> props(n, blank);
  if (props_of(pd, &n, props.data()) != VK_SUCCESS) return;
  props.resize(n);
  for (const auto& p : props) {
    d.coop_matrix_shapes.push_back(std::to_string(p.MSize) + "x" + std::to_string(p.NSize) + "x" +
                                   std::to_string(p.KSize) + " " + component_name(p.AType) + "*" +
                                   component_name(p.BType) + "+" + component_name(p.CType) + "=" +
                                   component_name(p.ResultType) +
                                   (p.scope == VK_SCOPE_SUBGROUP_KHR ? " subgroup" : " other scope"));
    if (p.MSize == 16 && p.NSize == 16 && p.KSize == 16 && p.AType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
        p.BType == VK_COMPONENT_TYPE_FLOAT16_KHR && p.CType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
        p.ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR && p.scope == VK_SCOPE_SUBGROUP_KHR)
      d.coop_matrix_fp16 = true;
    if (p.MSize == 16 && p.NSize == 16 && p.KSize == 32 && p.AType == VK_COMPONENT_TYPE_SINT8_KHR &&
        p.BType == VK_COMPONENT_TYPE_SINT8_KHR && p.CType == VK_COMPONENT_TYPE_SINT32_KHR &&
        p.ResultType == VK_COMPONENT_TYPE_SINT32_KHR && p.scope == VK_SCOPE_SUBGROUP_KHR)
      d.coop_matrix_int8 = true;
  }
}

DeviceInfo describe(VkPhysicalDevice pd, uint32_t index) {
  DeviceInfo d;
  d.index = index;
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  subgroup.pNext = &driver;
  VkPhysicalDeviceIDProperties ids{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  ids.pNext = &subgroup;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &ids;
  vkGetPhysicalDeviceProperties2(pd, &props);
  const VkPhysicalDeviceProperties& p = props.properties;
  d.name = p.deviceName;
  d.type = type_name(p.deviceType);
  d.api_version = version_str(p.apiVersion);
  d.driver_version = std::to_string(p.driverVersion);
  d.vendor_id = p.vendorID;
  d.device_id = p.deviceID;
  d.driver_name = driver.driverName;
  d.driver_info = driver.driverInfo;
  char uuid[40];
  for (int i = 0; i < 16; ++i) std::snprintf(uuid + 2 * i, 3, "%02x", ids.deviceUUID[i]);
  d.device_uuid = uuid;
  d.subgroup_size = subgroup.subgroupSize;
  d.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  for (int i = 0; i < 3; ++i) {
    d.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
    d.max_workgroup_size[i] = p.limits.maxComputeWorkGroupSize[i];
  }
  d.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  d.max_shared_memory = p.limits.maxComputeSharedMemorySize;
  d.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  d.min_storage_buffer_offset_alignment = p.limits.minStorageBufferOffsetAlignment;

  VkPhysicalDeviceShaderFloat16Int8Features f16i8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  s16.pNext = &f16i8;
  VkPhysicalDevice8BitStorageFeatures s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  s8.pNext = &s16;
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  // Asked only of a device that offers the extension (the validation layer
  // rejects a feature struct of an extension the device lacks).
  const bool has_memory_model = has_extension(pd, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
  if (has_memory_model) f16i8.pNext = &memory_model;
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  feats.pNext = &s8;
  vkGetPhysicalDeviceFeatures2(pd, &feats);
  d.shader_float16 = f16i8.shaderFloat16;
  d.shader_int8 = f16i8.shaderInt8;
  d.storage_16bit = s16.storageBuffer16BitAccess;
  d.storage_8bit = s8.storageBuffer8BitAccess;
  if (has_extension(pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &dot};
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    VkPhysicalDeviceShaderIntegerDotProductProperties dp{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &dp};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    d.integer_dot_product = dot.shaderIntegerDotProduct;
    d.integer_dot_product_accelerated = d.integer_dot_product && dp.integerDotProduct4x8BitPackedSignedAccelerated;
  }
  if (has_extension(pd, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &sm};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    d.compute_units = sm.shaderSMCount;
  } else if (has_extension(pd, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderCorePropertiesAMD core{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &core};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    d.compute_units = core.shaderEngineCount * core.shaderArraysPerEngineCount * core.computeUnitsPerShaderArray;
  }
  d.cooperative_matrix_khr = has_extension(pd, "VK_KHR_cooperative_matrix");
  d.cooperative_matrix_nv = has_extension(pd, "VK_NV_cooperative_matrix");
  d.vulkan_memory_model = has_memory_model && memory_model.vulkanMemoryModel;
  if (d.cooperative_matrix_khr) describe_coop_matrices(pd, d);
  // gemm_coop.comp: eight subgroups of 32 and 49,152 bytes of shared memory.
  d.coop_matrix_fp16 = d.coop_matrix_fp16 && d.subgroup_size == 32 && d.storage_16bit && d.shader_float16 &&
                       d.vulkan_memory_model && d.max_shared_memory >= 49152;
  d.coop_matrix_int8 = d.coop_matrix_int8 && d.subgroup_size == 32 && d.shader_int8 && d.vulkan_memory_model &&
                       d.max_shared_memory >= 49152;

  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  d.heaps.resize(mem.memoryHeapCount);
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h) {
    d.heaps[h].size = mem.memoryHeaps[h].size;
    d.heaps[h].device_local = mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
  }
  for (uint32_t t = 0; t < mem.memoryTypeCount; ++t)
    if (mem.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
      d.heaps[mem.memoryTypes[t].heapIndex].host_visible = true;
  // Unified: the device's memory is the host's (integrated GPUs, CPU
  // implementations). A discrete GPU whose whole VRAM is host-visible
  // (resizable BAR) is not: host reads of VRAM are uncached and slow.
  d.unified_memory = p.deviceType != VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  uint64_t local = 0;
  for (const MemoryHeap& h : d.heaps)
    if (h.device_local) {
      local += h.size;
      d.unified_memory = d.unified_memory && h.host_visible;
    }

  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> q(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, q.data());
  for (const auto& f : q)
    if ((f.queueFlags & VK_QUEUE_COMPUTE_BIT) && !(f.queueFlags & VK_QUEUE_GRAPHICS_BIT)) d.has_compute_only_queue = true;

  d.score = type_score(p.deviceType) + int(std::min<uint64_t>(local >> 30, 999));
  return d;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<DeviceInfo> enumerate_devices() {
  VkInstance inst = shared_instance();
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(inst, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  vkEnumeratePhysicalDevices(inst, &n, pds.data());
  std::vector<DeviceInfo> out;
  for (uint32_t i = 0; i < n; ++i) out.push_back(describe(pds[i], i));
  return out;
}

size_t pick_device(const std::vector<DeviceInfo>& devices, const std::string& want) {
  KESTREL_CHECK(!devices.empty(), "no Vulkan device found (Debian: install mesa-vulkan-drivers for lavapipe)");
  auto names = [&] {
    std::string s;
    for (const auto& d : devices) s += (s.empty() ? "" : ", ") + std::to_string(d.index) + ": " + d.name;
    return s;
  };
  if (!want.empty()) {
    bool numeric = std::all_of(want.begin(), want.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    for (size_t i = 0; i < devices.size(); ++i) {
      if (numeric ? std::to_string(devices[i].index) == want : lower(devices[i].name).find(lower(want)) != std::string::npos)
        return i;
    }
    fail("Vulkan device '", want, "' (KESTREL_VK_DEVICE) matches no device; the devices are ", names());
  }
  size_t best = 0;
  for (size_t i = 1; i < devices.size(); ++i)
    if (devices[i].score > devices[best].score) best = i;
  return best;
}

}  // namespace kestrel::vulkan

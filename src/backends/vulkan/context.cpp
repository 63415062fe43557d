#include "backends/vulkan/context.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <filesystem>
#include <fstream>

#include "backends/vulkan/coop_matrix_khr.h"
#include "backends/vulkan/pipeline_cache_file.h"
#include "backends/vulkan/shader_index.h"
#include "core/error.h"

namespace kestrel::vulkan {
namespace {

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) fail("Vulkan: ", what, " failed (VkResult ", int(r), ")");
}

}  // namespace

void grid_for(uint64_t groups, uint32_t max_x, uint32_t& x, uint32_t& y) {
  if (groups <= max_x) {
    x = uint32_t(std::max<uint64_t>(groups, 1));
    y = 1;
    return;
  }
  y = uint32_t((groups + max_x - 1) / max_x);
  x = uint32_t((groups + y - 1) / y);
}

std::shared_ptr<Context> Context::open(const DeviceOptions& opts) {
  std::vector<DeviceInfo> devices = enumerate_devices();
  std::shared_ptr<Context> c(new Context());
  c->info_ = devices[pick_device(devices, opts.device)];
  c->cache_dir_ = opts.pipeline_cache_dir;
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(shared_instance(), &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  vkEnumeratePhysicalDevices(shared_instance(), &n, pds.data());
  KESTREL_CHECK(c->info_.index < n, "Vulkan device ", c->info_.index, " disappeared");
  c->physical_ = pds[c->info_.index];

  // Prefer a compute-only queue family (it does not wait behind graphics work).
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(c->physical_, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> fams(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(c->physical_, &nq, fams.data());
  int best = -1;
  for (uint32_t i = 0; i < nq; ++i) {
    if (!(fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    bool compute_only = !(fams[i].queueFlags & VK_QUEUE_GRAPHICS_BIT);
    if (best < 0 || compute_only) best = int(i);
    if (compute_only) break;
  }
  KESTREL_CHECK(best >= 0, "Vulkan device '", c->info_.name, "' has no compute queue");
  c->queue_family_ = uint32_t(best);
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(c->physical_, &props);
  if (fams[size_t(best)].timestampValidBits > 0) c->timestamp_period_ns_ = double(props.limits.timestampPeriod);

  // float16 storage needs both 16-bit storage buffers and float16 arithmetic
  // types (the shaders convert with float16_t).
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  c->fp16_enabled_ = c->info_.storage_16bit && c->info_.shader_float16;
  s16.storageBuffer16BitAccess = c->fp16_enabled_;
  f16.shaderFloat16 = c->fp16_enabled_;
  s16.pNext = &f16;

  // Tensor cores for float16 runs (DeviceOptions::coop_matrix): VK_KHR_cooperative_matrix,
  // when it offers 16x16x16 float16 x float16 + float32 per subgroup of 32
  // (gemm_coop.comp), with the Vulkan memory model its shaders declare.
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop{};
  coop.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR;
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  std::vector<const char*> extensions;
  c->info_.coop_matrix_fp16 = c->info_.coop_matrix_fp16 && c->fp16_enabled_ && opts.coop_matrix;
  // int8 tensor cores (gemm_integer_coop.comp) with the int8 arithmetic type;
  // the feature structs chain through the float16 ones.
  c->info_.coop_matrix_int8 = c->info_.coop_matrix_int8 && c->fp16_enabled_ && opts.coop_matrix;
  f16.shaderInt8 = c->info_.coop_matrix_int8;
  if (c->info_.coop_matrix_fp16 || c->info_.coop_matrix_int8) {
    coop.cooperativeMatrix = VK_TRUE;
    memory_model.vulkanMemoryModel = VK_TRUE;
    coop.pNext = &memory_model;
    f16.pNext = &coop;
    extensions.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    extensions.push_back(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
  }

  // Packed int8 dot products (gemm_integer_dot.comp), where offered.
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  if (c->info_.integer_dot_product) {
    dot.shaderIntegerDotProduct = VK_TRUE;
    extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  }

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = c->queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = c->fp16_enabled_ ? &s16 : nullptr;
  if (c->info_.integer_dot_product) {
    dot.pNext = const_cast<void*>(dci.pNext);
    dci.pNext = &dot;
  }
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = uint32_t(extensions.size());
  dci.ppEnabledExtensionNames = extensions.empty() ? nullptr : extensions.data();
  check(vkCreateDevice(c->physical_, &dci, nullptr, &c->device_), "vkCreateDevice");
  vkGetDeviceQueue(c->device_, c->queue_family_, 0, &c->queue_);
  vkGetPhysicalDeviceMemoryProperties(c->physical_, &c->memory_);
  c->load_pipeline_cache();
  return c;
}

Context::~Context() {
  if (!device_) return;
  // Whatever is still running (work a failed wait abandoned) finishes before
  // the memory it writes is freed.
  vkDeviceWaitIdle(device_);
  completed_ = submitted_;
  retired_.clear();
  save_pipeline_cache();
  for (auto& [k, p] : pipelines_) vkDestroyPipeline(device_, p.pipeline, nullptr);
  for (auto& [k, l] : layouts_) vkDestroyPipelineLayout(device_, l, nullptr);
  for (auto& [k, l] : set_layouts_) vkDestroyDescriptorSetLayout(device_, l, nullptr);
  if (cache_) vkDestroyPipelineCache(device_, cache_, nullptr);
  vkDestroyDevice(device_, nullptr);
}

void Context::load_pipeline_cache() {
  const std::string& dir = cache_dir_;
  std::vector<char> data;
  if (!dir.empty()) {
    char name[128];
    std::snprintf(name, sizeof name, "/vk-%s-%s-%016llx.bin", info_.device_uuid.c_str(), info_.driver_version.c_str(),
                  static_cast<unsigned long long>(shaders_hash()));
    cache_path_ = dir + name;
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(physical_, &props);
    PipelineCacheKey key{props.vendorID, props.deviceID, {}};
    std::memcpy(key.cache_uuid.data(), props.pipelineCacheUUID, key.cache_uuid.size());
    // Whatever is at the path that is not a sound cache for this device is
    // ignored: the cache is rebuilt, and saved over it when the path allows.
    data = read_pipeline_cache_file(cache_path_, key).data;
  }
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = data.size();
  ci.pInitialData = data.empty() ? nullptr : data.data();
  // If the driver still refuses the data, start empty.
  if (vkCreatePipelineCache(device_, &ci, nullptr, &cache_) != VK_SUCCESS) {
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    check(vkCreatePipelineCache(device_, &ci, nullptr, &cache_), "vkCreatePipelineCache");
    data.clear();
  }
  cache_loaded_bytes_ = data.size();
}

void Context::save_pipeline_cache() {
  if (cache_path_.empty() || !cache_) return;
  size_t size = 0;
  if (vkGetPipelineCacheData(device_, cache_, &size, nullptr) != VK_SUCCESS || size == 0) return;
  if (size == cache_loaded_bytes_) return;  // nothing new
  std::vector<char> data(size);
  if (vkGetPipelineCacheData(device_, cache_, &size, data.data()) != VK_SUCCESS) return;
  data.resize(size);
  // Best effort: a read-only home must not break inference.
  write_pipeline_cache_file(cache_path_, data);
}

const Pipeline& Context::pipeline(const std::string& name, bool f16, const std::vector<int32_t>& spec,
                                  uint32_t bindings) {
  std::string key = name + (f16 ? "/f16" : "/f32") + "/" + std::to_string(bindings);
  for (int32_t s : spec) key += "," + std::to_string(s);
  std::lock_guard<std::mutex> lock(pipelines_mu_);
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) return it->second;
  KESTREL_CHECK(!f16 || fp16_enabled_, "Vulkan device '", info_.name, "' has no float16 storage");

  VkDescriptorSetLayout& set_layout = set_layouts_[bindings];
  if (!set_layout) {
    std::vector<VkDescriptorSetLayoutBinding> bind(bindings);
    for (uint32_t i = 0; i < bindings; ++i)
      bind[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dl.bindingCount = bindings;
    dl.pBindings = bind.data();
    check(vkCreateDescriptorSetLayout(device_, &dl, nullptr, &set_layout), "vkCreateDescriptorSetLayout");
  }
  VkPipelineLayout& layout = layouts_[bindings];
  if (!layout) {
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set_layout;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &range;
    check(vkCreatePipelineLayout(device_, &pl, nullptr, &layout), "vkCreatePipelineLayout");
  }
  const ShaderBlob& blob = find_shader(name);
  VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  sm.codeSize = f16 ? blob.f16_bytes : blob.f32_bytes;
  sm.pCode = f16 ? blob.f16 : blob.f32;
  VkShaderModule module;
  check(vkCreateShaderModule(device_, &sm, nullptr, &module), "vkCreateShaderModule");
  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (size_t i = 0; i < spec.size(); ++i) entries[i] = {uint32_t(i), uint32_t(i * 4), 4};
  VkSpecializationInfo si{uint32_t(spec.size()), entries.data(), spec.size() * 4, spec.data()};
  VkComputePipelineCreateInfo cp{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cp.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT, module,
              "main", spec.empty() ? nullptr : &si};
  cp.layout = layout;
  Pipeline p;
  VkResult r = inject_fault(Fault::PipelineBuild) ? VK_ERROR_INITIALIZATION_FAILED
                                                  : vkCreateComputePipelines(device_, cache_, 1, &cp, nullptr, &p.pipeline);
  vkDestroyShaderModule(device_, module, nullptr);
  if (r != VK_SUCCESS)
    throw PipelineFailed("Vulkan: building the pipeline for shader '" + name + "' failed (VkResult " +
                         std::to_string(int(r)) + ")");
  p.layout = layout;
  p.set_layout = set_layout;
  p.bindings = bindings;
  p.shader = name;
  return pipelines_[key] = p;
}

size_t Context::pipelines_built() const {
  std::lock_guard<std::mutex> lock(pipelines_mu_);
  return pipelines_.size();
}

uint64_t Context::submit(VkCommandBuffer cmd, VkFence fence) {
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  VkResult r = VK_ERROR_DEVICE_LOST;
  uint64_t serial = 0;
  if (!lost_ && !inject_fault(Fault::DeviceLost)) {
    std::lock_guard<std::mutex> lock(queue_mu_);
    r = vkQueueSubmit(queue_, 1, &si, fence);
    if (r == VK_SUCCESS) serial = ++submitted_;
  }
  if (r == VK_ERROR_DEVICE_LOST) device_lost();
  check(r, "vkQueueSubmit");
  return serial;
}

void Context::device_lost() {
  lost_ = true;
  throw DeviceLost("Vulkan: device '" + info_.name + "' was lost (driver reset or hang)");
}

void Context::wait(VkFence fence, uint64_t serial, double timeout_s) {
  VkResult r = vkWaitForFences(device_, 1, &fence, VK_TRUE, uint64_t(std::max(0.0, timeout_s) * 1e9));
  if (r == VK_TIMEOUT)
    fail("Vulkan: work on '", info_.name, "' did not finish within ", timeout_s,
         " s (the device may be overloaded or hung; its memory is kept until it finishes)");
  if (r == VK_ERROR_DEVICE_LOST) device_lost();
  check(r, "vkWaitForFences");
  vkResetFences(device_, 1, &fence);
  // Everything up to `serial` is done: what was retired behind it can go
  // (destroyed outside the lock: it may take the allocators' locks).
  std::vector<std::shared_ptr<void>> done;
  {
    std::lock_guard<std::mutex> lock(retired_mu_);
    completed_ = std::max(completed_, serial);
    auto keep = retired_.begin();
    for (auto& entry : retired_) {
      if (entry.first <= completed_) done.push_back(std::move(entry.second));
      else *keep++ = std::move(entry);
    }
    retired_.erase(keep, retired_.end());
  }
}

bool Context::finished(uint64_t serial) const {
  std::lock_guard<std::mutex> lock(retired_mu_);
  return serial <= completed_;
}

void Context::retire(std::shared_ptr<void> keep) {
  uint64_t last;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    last = submitted_;
  }
  {
    std::lock_guard<std::mutex> lock(retired_mu_);
    if (last > completed_) {
      retired_.emplace_back(last, std::move(keep));
      return;
    }
  }
  keep.reset();  // nothing in flight: freed now, outside the lock
}

size_t Context::retired_count() const {
  std::lock_guard<std::mutex> lock(retired_mu_);
  return retired_.size();
}

}  // namespace kestrel::vulkan

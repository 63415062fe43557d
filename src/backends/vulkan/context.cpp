#include "backends/vulkan/context.h"

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

std::unique_ptr<Context> Context::open() {
  std::vector<DeviceInfo> devices = enumerate_devices();
  std::unique_ptr<Context> c(new Context());
  c->info_ = devices[pick_device(devices)];
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

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = c->queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  check(vkCreateDevice(c->physical_, &dci, nullptr, &c->device_), "vkCreateDevice");
  vkGetDeviceQueue(c->device_, c->queue_family_, 0, &c->queue_);
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = c->queue_family_;
  check(vkCreateCommandPool(c->device_, &pci, nullptr, &c->pool_), "vkCreateCommandPool");
  vkGetPhysicalDeviceMemoryProperties(c->physical_, &c->memory_);
  return c;
}

Context::~Context() {
  if (!device_) return;
  vkDeviceWaitIdle(device_);
  vkDestroyCommandPool(device_, pool_, nullptr);
  vkDestroyDevice(device_, nullptr);
}

Buffer Context::create_buffer(size_t bytes) {
  Buffer b;
  b.size = std::max<size_t>(bytes, 4);
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = b.size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device_, &bci, nullptr, &b.buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, b.buffer, &req);
  const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t type = UINT32_MAX;
  for (uint32_t t = 0; t < memory_.memoryTypeCount && type == UINT32_MAX; ++t)
    if ((req.memoryTypeBits & (1u << t)) && (memory_.memoryTypes[t].propertyFlags & want) == want) type = t;
  if (type == UINT32_MAX) {
    vkDestroyBuffer(device_, b.buffer, nullptr);
    fail("Vulkan device '", info_.name, "' has no host-visible coherent memory for a ", bytes, "-byte buffer");
  }
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  VkResult r = vkAllocateMemory(device_, &mai, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(device_, b.buffer, nullptr);
    fail("Vulkan: out of device memory allocating ", bytes, " bytes on '", info_.name, "' (VkResult ", int(r), ")");
  }
  check(vkBindBufferMemory(device_, b.buffer, b.memory, 0), "vkBindBufferMemory");
  check(vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
  return b;
}

void Context::destroy(Buffer& b) {
  if (b.memory) vkFreeMemory(device_, b.memory, nullptr);  // unmaps implicitly
  if (b.buffer) vkDestroyBuffer(device_, b.buffer, nullptr);
  b = Buffer();
}

void Context::run(const Kernel& k, const std::vector<const Buffer*>& buffers, const void* push, uint32_t push_bytes,
                  uint64_t elements, uint32_t local_size) {
  // Everything here is created and destroyed per call: simple and leak-free;
  // the backend proper caches pipelines and records one command buffer per run.
  std::vector<VkDescriptorSetLayoutBinding> bind(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i)
    bind[i] = {uint32_t(i), VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dl.bindingCount = uint32_t(bind.size());
  dl.pBindings = bind.data();
  VkDescriptorSetLayout set_layout;
  check(vkCreateDescriptorSetLayout(device_, &dl, nullptr, &set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout;
  pl.pushConstantRangeCount = push_bytes ? 1 : 0;
  pl.pPushConstantRanges = &range;
  VkPipelineLayout layout;
  check(vkCreatePipelineLayout(device_, &pl, nullptr, &layout), "vkCreatePipelineLayout");
  VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  sm.codeSize = k.spirv_bytes;
  sm.pCode = k.spirv;
  VkShaderModule module;
  check(vkCreateShaderModule(device_, &sm, nullptr, &module), "vkCreateShaderModule");
  VkSpecializationMapEntry entry{0, 0, sizeof(int32_t)};
  VkSpecializationInfo spec{1, &entry, sizeof(int32_t), &k.spec0};
  VkComputePipelineCreateInfo cp{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cp.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT, module,
              "main", &spec};
  cp.layout = layout;
  VkPipeline pipeline;
  check(vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &cp, nullptr, &pipeline), "vkCreateComputePipelines");

  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, uint32_t(std::max<size_t>(buffers.size(), 1))};
  VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dp.maxSets = 1;
  dp.poolSizeCount = 1;
  dp.pPoolSizes = &size;
  VkDescriptorPool pool;
  check(vkCreateDescriptorPool(device_, &dp, nullptr, &pool), "vkCreateDescriptorPool");
  VkDescriptorSetAllocateInfo da{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  da.descriptorPool = pool;
  da.descriptorSetCount = 1;
  da.pSetLayouts = &set_layout;
  VkDescriptorSet set;
  check(vkAllocateDescriptorSets(device_, &da, &set), "vkAllocateDescriptorSets");
  std::vector<VkDescriptorBufferInfo> infos(buffers.size());
  std::vector<VkWriteDescriptorSet> writes(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    infos[i] = {buffers[i]->buffer, 0, VK_WHOLE_SIZE};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = uint32_t(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(device_, uint32_t(writes.size()), writes.data(), 0, nullptr);

  VkCommandBufferAllocateInfo ca{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ca.commandPool = pool_;
  ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ca.commandBufferCount = 1;
  VkCommandBuffer cmd;
  check(vkAllocateCommandBuffers(device_, &ca, &cmd), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vkBeginCommandBuffer(cmd, &bi);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
  if (push_bytes) vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
  uint32_t gx, gy;
  grid_for((elements + local_size - 1) / local_size, info_.max_workgroup_count[0], gx, gy);
  KESTREL_CHECK(gy <= info_.max_workgroup_count[1], "Vulkan: ", elements, " elements need more than ",
                info_.max_workgroup_count[0], " x ", info_.max_workgroup_count[1], " workgroups");
  vkCmdDispatch(cmd, gx, gy, 1);
  // Make the shader's writes visible to the host's mapped reads.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT};
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0,
                       nullptr);
  vkEndCommandBuffer(cmd);
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  check(vkCreateFence(device_, &fi, nullptr, &fence), "vkCreateFence");
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  VkResult r = vkQueueSubmit(queue_, 1, &si, fence);
  if (r == VK_SUCCESS) r = vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_C(60) * 1000000000);
  vkDestroyFence(device_, fence, nullptr);
  vkFreeCommandBuffers(device_, pool_, 1, &cmd);
  vkDestroyDescriptorPool(device_, pool, nullptr);
  vkDestroyPipeline(device_, pipeline, nullptr);
  vkDestroyShaderModule(device_, module, nullptr);
  vkDestroyPipelineLayout(device_, layout, nullptr);
  vkDestroyDescriptorSetLayout(device_, set_layout, nullptr);
  if (r == VK_TIMEOUT) fail("Vulkan: a dispatch on '", info_.name, "' did not finish within 60 s");
  check(r, "vkQueueSubmit/vkWaitForFences");
}

}  // namespace kestrel::vulkan

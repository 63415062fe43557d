#include "backends/vulkan/recorder.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace kestrel::vulkan {
namespace {

constexpr uint32_t kSetsPerPool = 512;
// Timestamps: a command buffer holds at most 64 dispatches (submit_recorded),
// each followed by one, after one at its start.
constexpr uint32_t kQueriesPerCmd = 66;
constexpr uint32_t kCmdsPerPool = 64;
constexpr uint32_t kDescriptorsPerPool = kSetsPerPool * 8;

bool overlap(const BufferRange& a, const BufferRange& b) {
  VkBuffer ma = a.block ? a.block : a.buffer, mb = b.block ? b.block : b.buffer;
  size_t oa = a.block ? a.block_offset : a.offset, ob = b.block ? b.block_offset : b.offset;
  return ma == mb && oa < ob + b.size && ob < oa + a.size;
}

// The work one submit may hold, in FLOPs (node_flops: 2 per multiply-add,
// else 1 per output element). lavapipe ran IS-Net medium's convolutions
// (319 GFLOP) at about 0.9 GFLOP/s on two cores shared with other builds and
// tests, so 1 GFLOP is about a second there, against a wait limit of
// minutes (its largest convolution, 39 GFLOP, once went as one submit: the
// waits that gave up under load). Mobile GPUs reset work that runs past
// about 500 ms (msm's hang check); 4 GFLOP is well under that at their tens
// of GFLOP/s. On a discrete GPU the 64-dispatch cap decides: 10 TFLOP is
// seconds even at the scalar float32 GEMM's few TFLOP/s, far within the
// wait limit. (At 1 TFLOP, ModernBERT-base on 8 x 512 tokens, 1.05 TFLOP in
// one fused node, went out a dispatch per submit: 335 submits, on an H200.)
double work_per_submit(const DeviceInfo& d) {
  if (d.type == "cpu") return 1e9;
  if (d.type == "discrete") return 1e13;
  return 4e9;
}

}  // namespace

Recorder::Recorder(Context& ctx, double wait_s)
    : ctx_(ctx), wait_s_(wait_s), work_per_submit_(work_per_submit(ctx.info())) {
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pci.queueFamilyIndex = ctx.queue_family();
  if (vkCreateCommandPool(ctx.device(), &pci, nullptr, &pool_) != VK_SUCCESS) fail("Vulkan: vkCreateCommandPool failed");
}

Recorder::~Recorder() {
  // A failed recorder reaches here through Context::retire, once its work is
  // done. Anything else still in flight (an owner that never flushed) is
  // waited for: the pools below hold what the device reads.
  if (fences_used_ > waited_ && !ctx_.finished(last_serial_)) vkDeviceWaitIdle(ctx_.device());
  for (VkDescriptorPool p : descriptor_pools_) vkDestroyDescriptorPool(ctx_.device(), p, nullptr);
  for (VkQueryPool q : query_pools_) vkDestroyQueryPool(ctx_.device(), q, nullptr);
  for (VkFence f : fences_) vkDestroyFence(ctx_.device(), f, nullptr);
  vkDestroyCommandPool(ctx_.device(), pool_, nullptr);
}

VkCommandBuffer Recorder::begin() {
  if (cmd_) return cmd_;
  // Command buffers are reused run after run: the pool is reset, never grown past the most one run needed.
  if (cmds_used_ == cmds_.size()) {
    VkCommandBufferAllocateInfo ca{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ca.commandPool = pool_;
    ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ca.commandBufferCount = 1;
    VkCommandBuffer c;
    if (vkAllocateCommandBuffers(ctx_.device(), &ca, &c) != VK_SUCCESS) fail("Vulkan: vkAllocateCommandBuffers failed");
    cmds_.push_back(c);
  }
  cmd_ = cmds_[cmds_used_++];
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  // A run that may be kept for replay is submitted more than once.
  bi.flags = 0;
  vkBeginCommandBuffer(cmd_, &bi);
  if (profiling_) {
    const size_t c = cmds_used_ - 1;
    timed_.resize(cmds_used_);
    timed_[c].clear();
    while (query_pools_.size() <= c / kCmdsPerPool) {
      VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qi.queryCount = kQueriesPerCmd * kCmdsPerPool;
      VkQueryPool q;
      if (vkCreateQueryPool(ctx_.device(), &qi, nullptr, &q) != VK_SUCCESS) fail("Vulkan: vkCreateQueryPool failed");
      query_pools_.push_back(q);
    }
    VkQueryPool q = query_pools_[c / kCmdsPerPool];
    const uint32_t base = uint32_t(c % kCmdsPerPool) * kQueriesPerCmd;
    vkCmdResetQueryPool(cmd_, q, base, kQueriesPerCmd);
    vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, q, base);
  }
  return cmd_;
}

std::map<std::string, std::pair<double, int>> Recorder::take_profile() {
  std::map<std::string, std::pair<double, int>> by_shader;
  const double ms_per_tick = ctx_.timestamp_period_ns() * 1e-6;
  for (size_t c = 0; c < timed_.size(); ++c) {
    const std::vector<const std::string*>& shaders = timed_[c];
    if (shaders.empty()) continue;
    std::vector<uint64_t> t(shaders.size() + 1);
    VkResult r = vkGetQueryPoolResults(ctx_.device(), query_pools_[c / kCmdsPerPool],
                                       uint32_t(c % kCmdsPerPool) * kQueriesPerCmd, uint32_t(t.size()),
                                       t.size() * sizeof(uint64_t), t.data(), sizeof(uint64_t),
                                       VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) fail("Vulkan: reading timestamps failed (VkResult ", int(r), ")");
    for (size_t i = 0; i < shaders.size(); ++i) {
      auto& e = by_shader[*shaders[i]];
      e.first += double(t[i + 1] - std::min(t[i + 1], t[i])) * ms_per_tick;
      e.second += 1;
    }
  }
  timed_.clear();
  return by_shader;
}

void Recorder::hazard(const std::vector<BufferRange>& ranges) {
  bool need = false;
  for (const BufferRange& r : ranges)
    for (const BufferRange& t : touched_)
      if ((r.write || t.write) && overlap(r, t)) need = true;
  if (need) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                       VK_ACCESS_TRANSFER_WRITE_BIT;
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cmd_, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
    ++barriers_;
    touched_.clear();
  }
  touched_.insert(touched_.end(), ranges.begin(), ranges.end());
}

VkDescriptorSet Recorder::allocate_set(VkDescriptorSetLayout layout) {
  for (;; ++pool_in_use_) {
    if (pool_in_use_ == descriptor_pools_.size()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorsPerPool};
      VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      dp.maxSets = kSetsPerPool;
      dp.poolSizeCount = 1;
      dp.pPoolSizes = &size;
      VkDescriptorPool pool;
      if (vkCreateDescriptorPool(ctx_.device(), &dp, nullptr, &pool) != VK_SUCCESS)
        fail("Vulkan: vkCreateDescriptorPool failed");
      descriptor_pools_.push_back(pool);
    }
    VkDescriptorSetAllocateInfo da{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    da.descriptorPool = descriptor_pools_[pool_in_use_];
    da.descriptorSetCount = 1;
    da.pSetLayouts = &layout;
    VkDescriptorSet set;
    VkResult r = vkAllocateDescriptorSets(ctx_.device(), &da, &set);
    if (r == VK_SUCCESS) {
      sets_used_ = true;
      return set;
    }
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
      fail("Vulkan: vkAllocateDescriptorSets failed (VkResult ", int(r), ")");
  }
}

void Recorder::dispatch(const Pipeline& p, const std::vector<BufferRange>& ranges, const void* push,
                        uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  KESTREL_CHECK(ranges.size() == p.bindings, "Vulkan: a pipeline with ", p.bindings, " bindings got ", ranges.size(),
                " buffers");
  KESTREL_CHECK(push_bytes <= kPushBytes, "Vulkan: ", push_bytes, " bytes of push constants (at most ", kPushBytes, ")");
  const uint32_t* maxc = ctx_.info().max_workgroup_count;
  KESTREL_CHECK(gx <= maxc[0] && gy <= maxc[1] && gz <= maxc[2], "Vulkan: dispatch of ", gx, " x ", gy, " x ", gz,
                " workgroups exceeds the device's ", maxc[0], " x ", maxc[1], " x ", maxc[2]);
  if (gx == 0 || gy == 0 || gz == 0) return;
  VkCommandBuffer cmd = begin();
  VkDescriptorSet set = allocate_set(p.set_layout);
  std::vector<VkDescriptorBufferInfo> infos(ranges.size());
  std::vector<VkWriteDescriptorSet> writes(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    infos[i] = {ranges[i].buffer, ranges[i].offset, ranges[i].size};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = uint32_t(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(ctx_.device(), uint32_t(writes.size()), writes.data(), 0, nullptr);
  hazard(ranges);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
  if (push_bytes) vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
  vkCmdDispatch(cmd, gx, gy, gz);
  if (profiling_ && cmds_used_ <= timed_.size()) {  // a buffer begun before profiling was set is not timed
    const size_t c = cmds_used_ - 1;
    timed_[c].push_back(&p.shader);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pools_[c / kCmdsPerPool],
                        uint32_t(c % kCmdsPerPool) * kQueriesPerCmd + uint32_t(timed_[c].size()));
  }
  ++dispatches_;
  if (++since_submit_ >= 64 || submit_each_dispatch_) submit_recorded();
}

void Recorder::begin_node(double estimated_flops) {
  if (cmd_ && work_since_submit_ + estimated_flops > work_per_submit_) submit_recorded();
  submit_each_dispatch_ = estimated_flops > work_per_submit_;
}

void Recorder::end_node(double flops) {
  submit_each_dispatch_ = false;
  work_since_submit_ += flops;
  if (cmd_ && work_since_submit_ >= work_per_submit_) submit_recorded();
}

void Recorder::submit_recorded() {
  KESTREL_CHECK(!failed_, "Vulkan: recording after a failed wait");
  vkEndCommandBuffer(cmd_);
  VkCommandBuffer cmd = cmd_;
  cmd_ = VK_NULL_HANDLE;
  since_submit_ = 0;
  work_since_submit_ = 0;
  submit(cmd);
}

void Recorder::submit(VkCommandBuffer cmd) {
  KESTREL_CHECK(!failed_, "Vulkan: submitting after a failed wait");
  if (fences_used_ == fences_.size()) {
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence f;
    if (vkCreateFence(ctx_.device(), &fi, nullptr, &f) != VK_SUCCESS) fail("Vulkan: vkCreateFence failed");
    fences_.push_back(f);
    serials_.push_back(0);
  }
  try {
    last_serial_ = serials_[fences_used_] = ctx_.submit(cmd, fences_[fences_used_]);
  } catch (...) {
    failed_ = true;  // a lost device: earlier submits may still be in flight
    throw;
  }
  ++fences_used_;
  ++submits_;
}

void Recorder::copy(const BufferRange& src, const BufferRange& dst) {
  VkCommandBuffer cmd = begin();
  BufferRange s = src, d = dst;
  s.write = false;
  d.write = true;
  hazard({s, d});
  VkBufferCopy region{src.offset, dst.offset, std::min(src.size, dst.size)};
  vkCmdCopyBuffer(cmd, src.buffer, dst.buffer, 1, &region);
}

void Recorder::flush() {
  if (!cmd_) {
    if (fences_used_ == 0) return;
    begin();  // an empty buffer carries the host-visibility barrier
  }
  // Shader and copy writes become visible to the host's reads of mapped memory.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  submit_recorded();
  wait_submitted();
}

void Recorder::wait_submitted() {
  // Every submit so far is done once all their fences have signalled. Each
  // wait covers one submit's work: the one before it has already finished.
  using ms = std::chrono::duration<double, std::milli>;
  auto t0 = std::chrono::steady_clock::now();
  try {
    for (; waited_ < fences_used_; ++waited_) {
      auto w0 = std::chrono::steady_clock::now();
      ctx_.wait(fences_[waited_], serials_[waited_], wait_s_);
      longest_wait_ms_ = std::max(longest_wait_ms_, ms(std::chrono::steady_clock::now() - w0).count());
    }
  } catch (...) {
    failed_ = true;
    throw;
  }
  wait_ms_ += ms(std::chrono::steady_clock::now() - t0).count();
  fences_used_ = waited_ = 0;
  touched_.clear();
}

void Recorder::keep() {
  KESTREL_CHECK(kept_cmds_ == 0, "Vulkan: a recorder keeps one run at a time");
  keeping_ = true;
}

void Recorder::replay() {
  KESTREL_CHECK(kept_cmds_ > 0 && !cmd_ && fences_used_ == 0, "Vulkan: nothing kept to replay");
  for (size_t i = 0; i < kept_cmds_; ++i) {
    submit(cmds_[i]);
  }
  wait_submitted();
}

void Recorder::drop_kept() {
  if (kept_cmds_ == 0) return;
  kept_cmds_ = 0;
  reset();
}

void Recorder::reset() {
  KESTREL_CHECK(!failed_, "Vulkan: a recorder whose work may still run cannot be reused");
  flush();
  if (keeping_) {
    // Every buffer recorded went out once, in order (submit_recorded).
    keeping_ = false;
    kept_cmds_ = cmds_used_;
  }
  timed_.clear();
  profiling_ = false;
  if (kept_cmds_ > 0) {
    dispatches_ = barriers_ = submits_ = 0;
    wait_ms_ = longest_wait_ms_ = 0;
    return;
  }
  // A run that left everything on the CPU recorded nothing: no pool to reset
  // (driver calls that cost a small model's run several microseconds).
  if (cmds_used_ > 0) vkResetCommandPool(ctx_.device(), pool_, 0);
  for (size_t i = 0; sets_used_ && i < descriptor_pools_.size() && i <= pool_in_use_; ++i)
    vkResetDescriptorPool(ctx_.device(), descriptor_pools_[i], 0);
  pool_in_use_ = 0;
  sets_used_ = false;
  cmds_used_ = 0;
  dispatches_ = barriers_ = submits_ = 0;
  wait_ms_ = longest_wait_ms_ = 0;
}

}  // namespace kestrel::vulkan

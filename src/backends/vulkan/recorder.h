// Records the GPU work of one run into command buffers. The buffer so far is
// submitted without waiting every 64 dispatches, and wherever the work since
// the last submit would pass a budget sized for the device (work_per_submit
// in recorder.cpp; a node over it alone is submitted dispatch by dispatch): the GPU starts while the rest is
// recorded, and each submit finishes far within the wait limit even on a
// loaded CPU device or under a mobile GPU's hang check. The host waits only
// when it needs a result. A wait that gives up marks the recorder failed: its
// work may still be running, so its owner hands it to Context::retire
// instead of freeing it. A barrier goes in only where a dispatch or copy
// touches memory that earlier, unbarriered work wrote (read after write), or
// writes memory that earlier work read or wrote (the allocator reuses freed
// ranges within a run). Descriptor sets come from pools that are reset after
// every run, so they never leak.
#pragma once
#include <vulkan/vulkan.h>

#include <map>
#include <string>
#include <vector>

#include "backends/vulkan/context.h"
#include "backends/vulkan/memory.h"

namespace kestrel::vulkan {

// What a dispatch or copy binds (buffer, offset, size), and where that is in
// memory (block, block_offset: hazards are found by memory, since in
// exact-buffer mode two buffers can alias one reused range).
struct BufferRange {
  VkBuffer buffer = VK_NULL_HANDLE;
  size_t offset = 0, size = 0;
  bool write = false;
  VkBuffer block = VK_NULL_HANDLE;  // VK_NULL_HANDLE: `buffer` itself, at `offset`
  size_t block_offset = 0;
};

// `size` bytes of allocation `a` from `at` bytes into it.
inline BufferRange range_of(const Allocation& a, size_t at, size_t size, bool write) {
  return {a.buffer(), a.buffer_offset() + at, size, write, a.block->buffer, a.offset + at};
}

class Recorder {
 public:
  // wait_s: the longest flush() waits for any one submit (Context::wait).
  Recorder(Context& ctx, double wait_s);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Binds `ranges` at bindings 0..n-1 and dispatches gx * gy * gz workgroups.
  void dispatch(const Pipeline& p, const std::vector<BufferRange>& ranges, const void* push, uint32_t push_bytes,
                uint32_t gx, uint32_t gy, uint32_t gz);
  void copy(const BufferRange& src, const BufferRange& dst);
  // Before each node: about `estimated_flops` of work will be recorded for
  // it. A node that would take the submit past the budget starts a new one,
  // and a node over the budget by itself closes a submit after each of its
  // dispatches (kernels split long work into dispatches of bounded work).
  void begin_node(double estimated_flops);
  // After each node: `flops` of work were recorded for it (node_flops).
  void end_node(double flops);
  // Submits what was recorded (if anything) and waits for all of it.
  void flush();
  // A wait gave up or the device was lost: submitted work may still run.
  bool failed() const { return failed_; }
  // After a run: command buffers and descriptor sets go back to their pools
  // (unless kept, below). Not allowed once failed().
  void reset();

  // Replay (replay.h): the command buffers and descriptor sets of the run
  // recorded since the last reset() are kept at the next reset() instead of
  // going back to their pools; replay() submits them again, in the order
  // they first went, and waits for them. Their buffers and push constants
  // are what they were: the owner keeps every range they bind as it was.
  void keep();
  void replay();
  // The kept run's buffers go back to their pools (before recording again).
  void drop_kept();

  // Timestamps after each dispatch of the run being recorded (where the
  // context's queue writes them), for a profile of device time by kernel.
  void set_profiling(bool on) { profiling_ = on && ctx_.timestamp_period_ns() > 0; }
  // After the run's last flush: device ms and dispatches by shader since
  // profiling was set (each dispatch from the end of the one before it in
  // its command buffer, or from that buffer's start).
  std::map<std::string, std::pair<double, int>> take_profile();

  size_t dispatches() const { return dispatches_; }
  size_t barriers() const { return barriers_; }
  size_t submits() const { return submits_; }
  double wait_ms() const { return wait_ms_; }  // host time spent waiting for the device this run
  double longest_wait_ms() const { return longest_wait_ms_; }  // the longest wait for one submit this run

 private:
  VkCommandBuffer begin();
  void submit_recorded();  // ends and submits cmd_ without waiting
  void submit(VkCommandBuffer cmd);  // without waiting, with the next fence
  void wait_submitted();   // for every submit since the last wait
  void hazard(const std::vector<BufferRange>& ranges);
  VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);

  Context& ctx_;
  double wait_s_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::vector<VkFence> fences_;     // one per submit of a run, reused run after run
  std::vector<uint64_t> serials_;   // the submit serial each used fence signals (Context::submit)
  uint64_t last_serial_ = 0;        // of the latest submit
  bool failed_ = false;
  double work_per_submit_;          // FLOPs
  double work_since_submit_ = 0;
  bool submit_each_dispatch_ = false;  // inside a node over the budget by itself
  size_t fences_used_ = 0;          // fences_[0, fences_used_) were submitted since the last flush
  size_t waited_ = 0;               // ... and fences_[0, waited_) have signalled
  size_t since_submit_ = 0;         // dispatches recorded into cmd_
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;  // being recorded
  std::vector<VkCommandBuffer> cmds_;
  size_t cmds_used_ = 0;
  bool profiling_ = false;
  std::vector<VkQueryPool> query_pools_;  // kCmdsPerPool command buffers' timestamps each
  // Per command buffer recorded this run (by order), the shader of each
  // dispatch it timed.
  std::vector<std::vector<const std::string*>> timed_;
  size_t kept_cmds_ = 0;            // cmds_[0, kept_cmds_) hold a kept run (keep())
  bool keeping_ = false;            // keep() was called for the run being recorded
  std::vector<VkDescriptorPool> descriptor_pools_;
  size_t pool_in_use_ = 0;
  bool sets_used_ = false;          // a set was allocated since the last reset
  std::vector<BufferRange> touched_;  // since the last barrier
  size_t dispatches_ = 0, barriers_ = 0, submits_ = 0;
  double wait_ms_ = 0, longest_wait_ms_ = 0;
};

}  // namespace kestrel::vulkan

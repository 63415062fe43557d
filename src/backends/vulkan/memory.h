// Device memory sub-allocated from large blocks: one vkAllocateMemory per
// block (4 MiB first, doubling up to 64 MiB, or one larger block for a larger
// tensor), first fit with coalescing on release. Each block is one VkBuffer; a
// tensor is a range of it. Blocks are kept when empty, so a steady workload
// stops allocating after its first run and memory stays flat.
#pragma once
#include <vulkan/vulkan.h>

#include <cstddef>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/error.h"

namespace kestrel::vulkan {

class Context;

enum class MemoryKind {
  Device,  // device-local (also mapped on unified-memory devices)
  Host,    // host-visible, coherent (staging for uploads and read-back)
};

struct Block {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  uint8_t* mapped = nullptr;  // null when the memory is not host-visible
  size_t size = 0;
  std::map<size_t, size_t> free;  // offset -> size of each free range
  size_t high_water = 0;          // the end of the highest range handed out (Allocator::high_water_bytes)
};

struct Allocation {
  Block* block = nullptr;
  size_t offset = 0, size = 0;   // within the block
  VkBuffer exact = VK_NULL_HANDLE;  // a buffer of just this tensor's bytes (exact-buffer mode)
  // What descriptors and copies bind: the tensor's own buffer, or the block's at `offset`.
  VkBuffer buffer() const { return exact ? exact : block->buffer; }
  size_t buffer_offset() const { return exact ? 0 : offset; }
  uint8_t* mapped() const { return block->mapped ? block->mapped + offset : nullptr; }
};

// The Vulkan memory one session may hold (weights, tensors and staging,
// counted in whole blocks as allocated from the driver), shared by all of
// its allocators. 0: no limit.
struct MemoryBudget {
  explicit MemoryBudget(size_t limit_bytes) : limit(limit_bytes) {}
  const size_t limit;
  std::atomic<size_t> used{0};
};

// Thrown when an allocation does not fit: past the session's budget, or the
// driver answered VK_ERROR_OUT_OF_DEVICE_MEMORY / OUT_OF_HOST_MEMORY. The
// graph runner then runs the node on the CPU instead.
struct OutOfDeviceMemory : Error {
  using Error::Error;
};

class Allocator {
 public:
  // exact_buffers: each allocation also gets a VkBuffer of exactly its bytes,
  // bound to its range of the block, so that the validation layer's
  // GPU-assisted checks (which bound an access by the whole buffer) catch a
  // dispatch that strays past its tensor. Costs a vkCreateBuffer per tensor.
  Allocator(Context& ctx, MemoryKind kind, MemoryBudget* budget = nullptr, bool exact_buffers = false);
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // Throws Error naming the size and device when memory runs out.
  Allocation allocate(size_t bytes);
  void release(const Allocation& a);
  // Exact buffers of released allocations wait here until the work that
  // bound them has finished (the owner calls this after waiting for it).
  void destroy_released_buffers();

  // For memory that is host-visible but not coherent: make host writes
  // visible to the device (after writing) and device writes visible to the
  // host (after the device finished, before reading). No-ops when coherent.
  void host_wrote(const Allocation& a) const;
  void host_will_read(const Allocation& a) const;

  size_t reserved_bytes() const;  // sum of block sizes
  // Frees the blocks that hold nothing. Only when no recorded work may
  // still use them (a run's memory once its work has finished), and with no
  // exact buffers waiting to be destroyed.
  void release_empty_blocks();
  size_t largest_free_range() const;  // the largest allocation that needs no new block
  // The memory a run's tensors needed: over the blocks, the highest byte
  // handed out since the latest reset_high_water() (fragmentation included,
  // which a count of bytes in use would hide). Call the reset when nothing
  // is allocated, as at the start of a run.
  size_t high_water_bytes() const;
  void reset_high_water();
  size_t blocks() const;
  bool host_visible() const { return host_visible_; }

 private:
  Block* new_block(size_t bytes);
  VkBuffer exact_buffer(const Block& b, size_t offset, size_t bytes);
  Context& ctx_;
  MemoryKind kind_;
  MemoryBudget* budget_;
  bool exact_buffers_;
  std::vector<VkBuffer> released_buffers_;
  uint32_t type_ = 0;
  bool host_visible_ = false;
  bool coherent_ = true;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Block>> blocks_;
};

// A tensor's memory, returned to its allocator when the last reference goes.
struct DeviceMemory {
  Allocator* owner = nullptr;
  Allocation a;
  DeviceMemory(Allocator* o, Allocation al) : owner(o), a(al) {}
  ~DeviceMemory() { owner->release(a); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};

}  // namespace kestrel::vulkan

#include "backends/vulkan/memory.h"

#include "backends/vulkan/context.h"
#include "core/error.h"

namespace kestrel::vulkan {
namespace {

constexpr size_t kBlockBytes = size_t(64) << 20;
// An allocator's first block is 4 MiB and each next one twice the last, up
// to kBlockBytes: a small model holds a few MiB, not 64 per allocator (on
// boards whose GPU shares the system's memory, that is memory the system
// loses), and a large one still needs few vkAllocateMemory calls.
constexpr size_t kFirstBlockBytes = size_t(4) << 20;
constexpr size_t kAlign = 256;  // >= minStorageBufferOffsetAlignment on every known device

size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

}  // namespace

Allocator::Allocator(Context& ctx, MemoryKind kind, MemoryBudget* budget, bool exact_buffers)
    : ctx_(ctx), kind_(kind), budget_(budget), exact_buffers_(exact_buffers) {
  const VkPhysicalDeviceMemoryProperties& mp = ctx.memory_properties();
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  // Preference lists, best first: {flags wanted, flags to avoid}. On a
  // discrete GPU, device memory must not be the host-mapped window into VRAM
  // (BAR): host reads from it are uncached and crawl (~50 MB/s); results come
  // back through cached staging memory instead.
  struct Want {
    VkMemoryPropertyFlags want, avoid;
  };
  std::vector<Want> wants;
  if (kind == MemoryKind::Device) {
    if (ctx.info().unified_memory) wants.push_back({VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | host, 0});
    wants.push_back({VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT});
    wants.push_back({VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0});
    wants.push_back({host, 0});
  } else {
    // Staging is read back by the host: it must be cached (uncached,
    // write-combined memory reads at ~50 MB/s), coherent or not.
    const VkMemoryPropertyFlags cached = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    wants.push_back({cached | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT});
    wants.push_back({cached, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT});
    wants.push_back({cached, 0});
    wants.push_back({host, 0});
  }
  for (const Want& w : wants) {
    for (uint32_t t = 0; t < mp.memoryTypeCount; ++t) {
      VkMemoryPropertyFlags f = mp.memoryTypes[t].propertyFlags;
      if ((f & w.want) != w.want || (f & w.avoid)) continue;
      type_ = t;
      host_visible_ = (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0;
      coherent_ = (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
      return;
    }
  }
  fail("Vulkan device '", ctx.info().name, "' has no suitable memory type");
}

Allocator::~Allocator() {
  destroy_released_buffers();
  for (auto& b : blocks_) {
    vkDestroyBuffer(ctx_.device(), b->buffer, nullptr);
    vkFreeMemory(ctx_.device(), b->memory, nullptr);
    if (budget_) budget_->used -= b->size;
  }
}

Block* Allocator::new_block(size_t bytes) {
  auto b = std::make_unique<Block>();
  const size_t grow = std::min(kBlockBytes, kFirstBlockBytes << std::min<size_t>(blocks_.size(), 4));
  b->size = round_up(std::max(bytes, grow), grow);
  const char* what = kind_ == MemoryKind::Device ? "device" : "host-visible";
  if (budget_ && budget_->limit) {
    // Under a budget a block is what is left of it when that is less than a
    // whole block (but never less than the tensor). Reserved before it is
    // allocated, so runs on several threads cannot both take the last room.
    size_t used = budget_->used.load();
    size_t left = budget_->limit > used ? budget_->limit - used : 0;
    if (b->size > left) b->size = round_up(bytes, kAlign);
    if (budget_->used.fetch_add(b->size) + b->size > budget_->limit) {
      budget_->used -= b->size;
      throw OutOfDeviceMemory("Vulkan: a " + std::to_string(bytes) + "-byte tensor does not fit the session's " +
                              std::to_string(budget_->limit >> 20) + " MiB device memory budget (" +
                              std::to_string(used) + " bytes held)");
    }
  } else if (budget_) {
    budget_->used += b->size;
  }
  // From here the block's size is counted: every failure gives it back.
  auto unreserve = [&] {
    if (budget_) budget_->used -= b->size;
  };
  if (ctx_.inject_fault(Fault::OutOfDeviceMemory)) {
    unreserve();
    throw OutOfDeviceMemory("Vulkan: out of " + std::string(what) + " memory on '" + ctx_.info().name + "': a " +
                            std::to_string(bytes) + "-byte tensor needs a new block (VkResult " +
                            std::to_string(int(VK_ERROR_OUT_OF_DEVICE_MEMORY)) + ", injected)");
  }
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = b->size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (vkCreateBuffer(ctx_.device(), &bci, nullptr, &b->buffer) != VK_SUCCESS) {
    unreserve();
    fail("Vulkan: cannot create a ", b->size, "-byte buffer on '", ctx_.info().name, "'");
  }
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(ctx_.device(), b->buffer, &req);
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type_;
  VkResult r = (req.memoryTypeBits & (1u << type_)) ? vkAllocateMemory(ctx_.device(), &mai, nullptr, &b->memory)
                                                   : VK_ERROR_FEATURE_NOT_PRESENT;
  if (r != VK_SUCCESS) {
    unreserve();
    vkDestroyBuffer(ctx_.device(), b->buffer, nullptr);
    size_t have = 0;
    for (auto& x : blocks_) have += x->size;
    std::string msg = "Vulkan: out of " + std::string(what) + " memory on '" + ctx_.info().name + "': a " +
                      std::to_string(bytes) + "-byte tensor needs a new " + std::to_string(b->size) +
                      "-byte block (" + std::to_string(have) + " bytes already held; VkResult " +
                      std::to_string(int(r)) + ")";
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) throw OutOfDeviceMemory(msg);
    fail(msg);
  }
  vkBindBufferMemory(ctx_.device(), b->buffer, b->memory, 0);
  if (host_visible_) {
    void* p = nullptr;
    vkMapMemory(ctx_.device(), b->memory, 0, VK_WHOLE_SIZE, 0, &p);
    b->mapped = static_cast<uint8_t*>(p);
  }
  b->free[0] = b->size;
  blocks_.push_back(std::move(b));
  return blocks_.back().get();
}

Allocation Allocator::allocate(size_t bytes) {
  size_t need = round_up(std::max<size_t>(bytes, 4), kAlign);
  std::lock_guard<std::mutex> lock(mu_);
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (auto& b : blocks_) {
      for (auto it = b->free.begin(); it != b->free.end(); ++it) {
        if (it->second < need) continue;
        size_t off = it->first, left = it->second - need;
        b->free.erase(it);
        if (left) b->free[off + need] = left;
        Allocation a{b.get(), off, need};
        b->high_water = std::max(b->high_water, off + need);
        if (exact_buffers_) a.exact = exact_buffer(*b, off, (std::max<size_t>(bytes, 4) + 3) / 4 * 4);
        return a;
      }
    }
    if (attempt == 0) new_block(need);
  }
  fail("Vulkan: allocator could not place ", bytes, " bytes");  // unreachable: the new block fits
}

VkBuffer Allocator::exact_buffer(const Block& b, size_t offset, size_t bytes) {
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = bytes;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buf;
  if (vkCreateBuffer(ctx_.device(), &bci, nullptr, &buf) != VK_SUCCESS)
    fail("Vulkan: cannot create a ", bytes, "-byte buffer on '", ctx_.info().name, "'");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(ctx_.device(), buf, &req);
  if (offset % req.alignment || !(req.memoryTypeBits & (1u << type_)) ||
      vkBindBufferMemory(ctx_.device(), buf, b.memory, offset) != VK_SUCCESS) {
    vkDestroyBuffer(ctx_.device(), buf, nullptr);
    fail("Vulkan: cannot bind an exact ", bytes, "-byte buffer at offset ", offset, " (alignment ", req.alignment, ")");
  }
  return buf;
}

void Allocator::release(const Allocation& a) {
  if (!a.block) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (a.exact) released_buffers_.push_back(a.exact);
  auto& fr = a.block->free;
  auto [it, ok] = fr.emplace(a.offset, a.size);
  // Coalesce with the following and preceding free ranges.
  auto next = std::next(it);
  if (next != fr.end() && it->first + it->second == next->first) {
    it->second += next->second;
    fr.erase(next);
  }
  if (it != fr.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      fr.erase(it);
    }
  }
}

void Allocator::destroy_released_buffers() {
  std::vector<VkBuffer> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(released_buffers_);
  }
  for (VkBuffer b : done) vkDestroyBuffer(ctx_.device(), b, nullptr);
}

void Allocator::host_wrote(const Allocation& a) const {
  if (coherent_ || !a.block) return;
  VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, a.block->memory, 0, VK_WHOLE_SIZE};
  vkFlushMappedMemoryRanges(ctx_.device(), 1, &r);
}

void Allocator::host_will_read(const Allocation& a) const {
  if (coherent_ || !a.block) return;
  VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, a.block->memory, 0, VK_WHOLE_SIZE};
  vkInvalidateMappedMemoryRanges(ctx_.device(), 1, &r);
}

void Allocator::release_empty_blocks() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    Block& b = **it;
    if (b.free.size() != 1 || b.free.begin()->second != b.size) {
      ++it;
      continue;
    }
    vkDestroyBuffer(ctx_.device(), b.buffer, nullptr);
    vkFreeMemory(ctx_.device(), b.memory, nullptr);
    if (budget_) budget_->used -= b.size;
    it = blocks_.erase(it);
  }
}

size_t Allocator::largest_free_range() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t most = 0;
  for (auto& b : blocks_)
    for (const auto& [off, size] : b->free) most = std::max(most, size);
  return most;
}

size_t Allocator::high_water_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t s = 0;
  for (auto& b : blocks_) s += b->high_water;
  return s;
}

void Allocator::reset_high_water() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& b : blocks_) b->high_water = 0;
}

size_t Allocator::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t s = 0;
  for (auto& b : blocks_) s += b->size;
  return s;
}

size_t Allocator::blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return blocks_.size();
}

}  // namespace kestrel::vulkan

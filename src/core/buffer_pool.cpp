#include "core/buffer_pool.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>
#include <mutex>
#include <string>

#include <sys/mman.h>

#include "core/error.h"

namespace kestrel {
namespace {

// Size classes: multiples of 64 bytes up to 4 KiB, then four steps per power
// of two (so a buffer is at most 25% larger than asked for).
size_t size_class(size_t n) {
  if (n <= 4096) return std::max<size_t>(64, (n + 63) / 64 * 64);
  size_t p = 4096;
  while (p * 2 < n) p *= 2;
  size_t step = p / 4;
  return (n + step - 1) / step * step;
}

thread_local bool retention_off = false;

uint8_t* system_take(size_t cls) {
  if (cls >= kMappedBytes) {
    void* p = mmap(nullptr, cls, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);  // page-aligned, so 64-byte aligned
  }
  return static_cast<uint8_t*>(std::aligned_alloc(64, cls));
}

void system_give(uint8_t* p, size_t cls) {
  if (cls >= kMappedBytes) munmap(p, cls);
  else std::free(p);
}

class Pool {
 public:
  ~Pool() {
    for (auto& [size, stack] : idle_)
      for (uint8_t* p : stack) system_give(p, size);
  }
  // A buffer of at least `cls` bytes; `cls` is set to its size class. An
  // idle buffer of up to twice the size serves the request: memory already
  // held is used again instead of growing the heap by one buffer per
  // distinct tensor size over a run.
  uint8_t* take(size_t& cls) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = idle_.lower_bound(cls); it != idle_.end() && it->first <= 2 * cls; ++it) {
        if (it->second.empty()) continue;
        uint8_t* p = it->second.back();
        it->second.pop_back();
        idle_bytes_ -= it->first;
        cls = it->first;
        note_live(cls);
        return p;
      }
    }
    note_live(cls);
    uint8_t* p = system_take(cls);
    if (!p) {
      live_ -= cls;
      fail("a tensor needs ", cls, " bytes, more than the host can allocate now");
    }
    return p;
  }
  void give(uint8_t* p, size_t cls) {
    live_ -= cls;
    if (!retention_off) {
      std::lock_guard<std::mutex> lock(mu_);
      if (idle_bytes_ + cls <= cap_) {
        idle_[cls].push_back(p);
        idle_bytes_ += cls;
        return;
      }
    }
    system_give(p, cls);
  }
  size_t idle_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return idle_bytes_;
  }
  // Lowers or raises the cap; idle buffers past a lower one go back now.
  void set_cap(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    cap_ = bytes;
    for (auto it = idle_.begin(); it != idle_.end() && idle_bytes_ > cap_; ++it)
      while (!it->second.empty() && idle_bytes_ > cap_) {
        system_give(it->second.back(), it->first);
        it->second.pop_back();
        idle_bytes_ -= it->first;
      }
  }
  size_t live_bytes() const { return live_; }
  size_t peak_bytes() const { return peak_; }
  void reset_peak() { peak_ = live_.load(); }

 private:
  std::mutex mu_;
  // Size class -> idle buffers (stacks: after warm-up a run allocates no
  // bookkeeping of its own, unlike a multimap's node per buffer).
  std::map<size_t, std::vector<uint8_t*>> idle_;
  size_t idle_bytes_ = 0;
  size_t cap_ = size_t(4096) << 20;
  std::atomic<size_t> live_{0}, peak_{0};  // bytes handed out and not yet given back

  void note_live(size_t cls) {
    size_t now = live_ += cls;
    for (size_t p = peak_.load(); now > p && !peak_.compare_exchange_weak(p, now);) {
    }
  }
};

// Never destroyed: tensors held in static objects may be freed after main.
Pool& pool() {
  static Pool* p = new Pool();
  return *p;
}

}  // namespace

std::shared_ptr<uint8_t[]> pooled_bytes(size_t n, bool zero) {
  size_t cls = size_class(n);
  uint8_t* p = pool().take(cls);
  if (zero) std::memset(p, 0, n);
  return std::shared_ptr<uint8_t[]>(p, [cls](uint8_t* q) { pool().give(q, cls); });
}

void set_pool_cap(size_t bytes) { pool().set_cap(bytes); }

PoolRetentionOff::PoolRetentionOff() : was_(retention_off) { retention_off = true; }
PoolRetentionOff::~PoolRetentionOff() { retention_off = was_; }

size_t pool_idle_bytes() { return pool().idle_bytes(); }
size_t pool_live_bytes() { return pool().live_bytes(); }
size_t pool_peak_bytes() { return pool().peak_bytes(); }
void reset_pool_peak() { pool().reset_peak(); }

}  // namespace kestrel

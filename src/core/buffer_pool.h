// Host memory for tensors. Freed buffers are kept, by size class, for the
// next allocation of that class or of one up to half its size: a run allocates the same sizes as the run
// before it, so after the first run tensors come back warm (no page faults,
// no kernel zeroing) instead of from fresh mmap()s. The pool keeps at most
// 4096 MiB of idle buffers unless set_pool_cap says otherwise. Buffers of
// kMappedBytes and more are mapped from the system on their own and unmapped
// when the pool lets them go, so that memory given up really leaves the
// process (glibc would keep a large free in its heap once its mmap threshold
// has risen, and the RSS would stay at its peak).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace kestrel {

// 64-byte aligned storage of at least n bytes, zeroed when `zero` is set.
std::shared_ptr<uint8_t[]> pooled_bytes(size_t n, bool zero);

constexpr size_t kMappedBytes = size_t(128) << 10;

// While one lives on a thread, the buffers that thread frees are not kept
// idle but go back to the system: a run whose tensor sizes are new (the
// first run of a shape signature, before its arena is planned) then peaks
// at what it holds live, not at one idle buffer per distinct size as well.
class PoolRetentionOff {
 public:
  PoolRetentionOff();
  ~PoolRetentionOff();
  PoolRetentionOff(const PoolRetentionOff&) = delete;
  PoolRetentionOff& operator=(const PoolRetentionOff&) = delete;

 private:
  bool was_;
};

// The most idle memory the one pool of the process keeps (runtime::Config
// sets it from KESTREL_POOL_MB when a session is made).
void set_pool_cap(size_t bytes);

// Bytes now idle in the pool (for tests and memory reports).
size_t pool_idle_bytes();
// Bytes of tensor memory in use now, and the most in use at once since the
// process started or the latest reset_pool_peak() (memory reports).
size_t pool_live_bytes();
size_t pool_peak_bytes();
void reset_pool_peak();

}  // namespace kestrel

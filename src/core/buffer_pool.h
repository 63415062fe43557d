// Host memory for tensors. Freed buffers are kept, by size class, for the
// next allocation of that class or of one up to half its size: a run allocates the same sizes as the run
// before it, so after the first run tensors come back warm (no page faults,
// no kernel zeroing) instead of from fresh mmap()s. The pool keeps at most
// KESTREL_POOL_MB megabytes (default 4096) of idle buffers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace kestrel {

// 64-byte aligned storage of at least n bytes, zeroed when `zero` is set.
std::shared_ptr<uint8_t[]> pooled_bytes(size_t n, bool zero);

// Bytes now idle in the pool (for tests and memory reports).
size_t pool_idle_bytes();
// Bytes of tensor memory in use now, and the most in use at once since the
// process started or the latest reset_pool_peak() (memory reports).
size_t pool_live_bytes();
size_t pool_peak_bytes();
void reset_pool_peak();

}  // namespace kestrel

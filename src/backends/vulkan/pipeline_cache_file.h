// The file a Vulkan pipeline cache is kept in between processes. The cache
// only saves shader compilation time, so whatever sits at its path (a
// directory, a FIFO, a link to /dev/zero, a truncated or foreign file) is
// ignored and the cache rebuilt: reading never blocks, never reads without
// bound and never throws; writing is best effort.
//
// On disk: the driver's cache data, then a trailer of its length and an
// FNV-1a hash, so a file cut short or overwritten is never handed to a
// driver (which checks only the header the Vulkan spec defines).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kestrel::vulkan {

// Real caches hold a few MiB; anything much larger is not one of ours.
constexpr size_t kMaxPipelineCacheBytes = size_t(256) << 20;

// What the header of a cache for this device must say
// (VkPipelineCacheHeaderVersionOne: vendor, device, pipelineCacheUUID).
struct PipelineCacheKey {
  uint32_t vendor_id = 0, device_id = 0;
  std::array<uint8_t, 16> cache_uuid{};
};

struct PipelineCacheRead {
  std::vector<char> data;  // the driver's cache data; empty when none was usable
  std::string ignored;     // why the file was ignored ("" when read, or when there is none)
};

// The cache data at `path` for the device `key` describes.
PipelineCacheRead read_pipeline_cache_file(const std::string& path, const PipelineCacheKey& key,
                                           size_t max_bytes = kMaxPipelineCacheBytes);

// Writes `data` (from vkGetPipelineCacheData) to `path`, creating its folder:
// a fresh temporary file renamed over `path`, so concurrent readers see the
// old file or the new one, never half of one. False when it could not.
bool write_pipeline_cache_file(const std::string& path, const std::vector<char>& data);

}  // namespace kestrel::vulkan

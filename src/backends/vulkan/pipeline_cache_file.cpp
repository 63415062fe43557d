#include "backends/vulkan/pipeline_cache_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace kestrel::vulkan {
namespace {

constexpr size_t kTrailerBytes = 16;  // uint64 data length, uint64 FNV-1a of the data
constexpr size_t kHeaderBytes = 32;   // VkPipelineCacheHeaderVersionOne

uint64_t fnv1a(const char* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ uint8_t(p[i])) * 0x100000001b3ull;
  return h;
}

uint32_t u32_at(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Closes the descriptor however the function leaves.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads up to n bytes (fewer at end of file); -1 on an error.
ssize_t read_fully(int fd, char* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += size_t(r);
  }
  return ssize_t(got);
}

bool write_fully(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

PipelineCacheRead ignored(std::string why) { return {{}, std::move(why)}; }

}  // namespace

PipelineCacheRead read_pipeline_cache_file(const std::string& path, const PipelineCacheKey& key, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  // Links are followed (a linked cache folder is fine); what is opened must
  // then be a regular file, which rules out devices, FIFOs and directories.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) return ignored(errno == ENOENT ? "" : std::string("cannot open it: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return ignored(std::string("cannot stat it: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return ignored("not a regular file");
  if (uint64_t(st.st_size) > max_bytes + kTrailerBytes)
    return ignored("larger than " + std::to_string(max_bytes) + " bytes");
  std::vector<char> bytes(size_t(st.st_size));
  ssize_t got = read_fully(f.fd, bytes.data(), bytes.size());
  if (got < 0) return ignored(std::string("cannot read it: ") + std::strerror(errno));
  bytes.resize(size_t(got));  // (shorter when the file shrank meanwhile: the trailer check fails)

  if (bytes.size() < kHeaderBytes + kTrailerBytes) return ignored("too short to be a pipeline cache");
  const size_t n = bytes.size() - kTrailerBytes;
  uint64_t length, hash;
  std::memcpy(&length, bytes.data() + n, 8);
  std::memcpy(&hash, bytes.data() + n + 8, 8);
  if (length != n || hash != fnv1a(bytes.data(), n)) return ignored("truncated or corrupt (its checksum does not match)");
  const char* h = bytes.data();
  const uint32_t header_size = u32_at(h);
  if (header_size < kHeaderBytes || header_size > n || u32_at(h + 4) != 1 /* VK_PIPELINE_CACHE_HEADER_VERSION_ONE */)
    return ignored("its header is not a Vulkan pipeline cache header");
  if (u32_at(h + 8) != key.vendor_id || u32_at(h + 12) != key.device_id ||
      std::memcmp(h + 16, key.cache_uuid.data(), key.cache_uuid.size()) != 0)
    return ignored("made by another device or driver");
  bytes.resize(n);
  return {std::move(bytes), ""};
}

bool write_pipeline_cache_file(const std::string& path, const std::vector<char>& data) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // A name no other writer uses (processes and threads may save at once).
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)};
    if (f.fd < 0) return false;
    uint64_t trailer[2] = {uint64_t(data.size()), fnv1a(data.data(), data.size())};
    bool ok = write_fully(f.fd, data.data(), data.size()) &&
              write_fully(f.fd, reinterpret_cast<const char*>(trailer), sizeof trailer);
    ok = ::close(f.fd) == 0 && ok;
    f.fd = -1;
    if (!ok) {
      ::unlink(tmp.c_str());
      return false;
    }
  }
  // (rename replaces a link or FIFO at `path` itself, never what a link points
  // to; a directory there makes it fail, and the cache is simply not kept.)
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace kestrel::vulkan

// The Vulkan pipeline cache file: whatever sits at its path that is not a
// sound cache for this device (a directory, a FIFO, a link to /dev/zero, a
// truncated, oversized, foreign or garbage file) is ignored, never read
// without bound, never waited on, never fatal; and a Vulkan session still
// loads and runs with each of them in place.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>

#include "backends/vulkan/context.h"
#include "backends/vulkan/pipeline_cache_file.h"
#include "onnx_builders.h"
#include "runtime/session.h"
#include "scoped_env.h"
#include "vulkan_tests_switch.h"
#include "runtime/config.h"

using namespace kestrel;
using namespace kestrel::vulkan;
using namespace kestrel::test;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the temp folder, removed with everything in it.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag)
      : path(fs::temp_directory_path() / ("kestrel_pcache_" + tag + "_" + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

PipelineCacheKey test_key() {
  PipelineCacheKey k;
  k.vendor_id = 0x10de;
  k.device_id = 0x2335;
  for (size_t i = 0; i < k.cache_uuid.size(); ++i) k.cache_uuid[i] = uint8_t(i * 17 + 3);
  return k;
}

// Cache data as a driver gives it: a VkPipelineCacheHeaderVersionOne for
// `key`, then `payload` bytes.
std::vector<char> cache_data(const PipelineCacheKey& key, size_t payload) {
  std::vector<char> d(32 + payload);
  uint32_t head[4] = {32, 1, key.vendor_id, key.device_id};
  std::memcpy(d.data(), head, 16);
  std::memcpy(d.data() + 16, key.cache_uuid.data(), 16);
  for (size_t i = 0; i < payload; ++i) d[32 + i] = char(i * 31 + 7);
  return d;
}

// Reads in another thread, so a reader that blocks fails the test instead of hanging it.
PipelineCacheRead read_bounded(const std::string& path, size_t max_bytes = kMaxPipelineCacheBytes) {
  auto f = std::async(std::launch::async, [=] { return read_pipeline_cache_file(path, test_key(), max_bytes); });
  if (f.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "reading " << path << " blocked";
    std::abort();  // (the blocked thread cannot be joined)
  }
  return f.get();
}

void write_raw(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

std::vector<char> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST(PipelineCacheFile, WrittenCacheReadsBack) {
  TempDir dir("roundtrip");
  std::string path = (dir.path / "sub" / "vk.bin").string();  // the folder is created
  auto data = cache_data(test_key(), 1000);
  ASSERT_TRUE(write_pipeline_cache_file(path, data));
  PipelineCacheRead r = read_bounded(path);
  EXPECT_EQ(r.ignored, "");
  EXPECT_EQ(r.data, data);
  // No temporary file is left beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path / "sub"), fs::directory_iterator{}), 1);
}

TEST(PipelineCacheFile, MissingFileIsNoCache) {
  TempDir dir("missing");
  PipelineCacheRead r = read_bounded((dir.path / "vk.bin").string());
  EXPECT_TRUE(r.data.empty());
  EXPECT_EQ(r.ignored, "");
}

TEST(PipelineCacheFile, DirectoryIsIgnored) {
  TempDir dir("directory");
  fs::create_directory(dir.path / "vk.bin");
  PipelineCacheRead r = read_bounded((dir.path / "vk.bin").string());
  EXPECT_TRUE(r.data.empty());
  EXPECT_EQ(r.ignored, "not a regular file");
  // Saving over it fails quietly and leaves the directory alone.
  EXPECT_FALSE(write_pipeline_cache_file((dir.path / "vk.bin").string(), cache_data(test_key(), 10)));
  EXPECT_TRUE(fs::is_directory(dir.path / "vk.bin"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}), 1);  // no temp file left
}

TEST(PipelineCacheFile, LinkToDevZeroIsIgnored) {
  TempDir dir("devzero");
  fs::create_symlink("/dev/zero", dir.path / "vk.bin");
  PipelineCacheRead r = read_bounded((dir.path / "vk.bin").string());
  EXPECT_TRUE(r.data.empty());
  EXPECT_EQ(r.ignored, "not a regular file");
}

TEST(PipelineCacheFile, FifoIsIgnoredWithoutWaiting) {
  TempDir dir("fifo");
  ASSERT_EQ(mkfifo((dir.path / "vk.bin").c_str(), 0600), 0);
  PipelineCacheRead r = read_bounded((dir.path / "vk.bin").string());
  EXPECT_TRUE(r.data.empty());
  EXPECT_EQ(r.ignored, "not a regular file");
  // Saving replaces the FIFO with a file, without opening it.
  auto data = cache_data(test_key(), 64);
  ASSERT_TRUE(write_pipeline_cache_file((dir.path / "vk.bin").string(), data));
  EXPECT_EQ(read_bounded((dir.path / "vk.bin").string()).data, data);
}

TEST(PipelineCacheFile, SavingReplacesALinkNotItsTarget) {
  TempDir dir("link");
  write_raw(dir.path / "precious", {'k', 'e', 'e', 'p'});
  fs::create_symlink(dir.path / "precious", dir.path / "vk.bin");
  ASSERT_TRUE(write_pipeline_cache_file((dir.path / "vk.bin").string(), cache_data(test_key(), 8)));
  EXPECT_EQ(slurp(dir.path / "precious"), (std::vector<char>{'k', 'e', 'e', 'p'}));
  EXPECT_FALSE(fs::is_symlink(dir.path / "vk.bin"));
}

TEST(PipelineCacheFile, TruncatedFileIsIgnored) {
  TempDir dir("truncated");
  std::string path = (dir.path / "vk.bin").string();
  ASSERT_TRUE(write_pipeline_cache_file(path, cache_data(test_key(), 4096)));
  fs::resize_file(path, 2000);  // cut short: the header is intact, the data not
  PipelineCacheRead r = read_bounded(path);
  EXPECT_TRUE(r.data.empty());
  EXPECT_THAT(r.ignored, HasSubstr("truncated or corrupt"));
  fs::resize_file(path, 10);  // shorter than any header
  EXPECT_THAT(read_bounded(path).ignored, HasSubstr("too short"));
  fs::resize_file(path, 0);
  EXPECT_THAT(read_bounded(path).ignored, HasSubstr("too short"));
}

TEST(PipelineCacheFile, GarbageIsIgnored) {
  TempDir dir("garbage");
  std::string path = (dir.path / "vk.bin").string();
  std::vector<char> junk(5000);
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = char((i * 2654435761u) >> 13);
  write_raw(path, junk);
  EXPECT_THAT(read_bounded(path).ignored, HasSubstr("truncated or corrupt"));
  // One flipped byte inside a sound file is caught too.
  ASSERT_TRUE(write_pipeline_cache_file(path, cache_data(test_key(), 4096)));
  auto bytes = slurp(path);
  bytes[100] ^= 0x40;
  write_raw(path, bytes);
  EXPECT_THAT(read_bounded(path).ignored, HasSubstr("truncated or corrupt"));
}

TEST(PipelineCacheFile, OtherDevicesAndBadHeadersAreIgnored) {
  TempDir dir("foreign");
  std::string path = (dir.path / "vk.bin").string();
  PipelineCacheKey other = test_key();
  other.cache_uuid[5] ^= 1;
  ASSERT_TRUE(write_pipeline_cache_file(path, cache_data(other, 100)));
  EXPECT_EQ(read_bounded(path).ignored, "made by another device or driver");
  auto bad_version = cache_data(test_key(), 100);
  bad_version[4] = 7;  // headerVersion 7
  ASSERT_TRUE(write_pipeline_cache_file(path, bad_version));
  EXPECT_EQ(read_bounded(path).ignored, "its header is not a Vulkan pipeline cache header");
  auto bad_size = cache_data(test_key(), 100);
  bad_size[0] = char(200);  // headerSize past the data
  ASSERT_TRUE(write_pipeline_cache_file(path, bad_size));
  EXPECT_EQ(read_bounded(path).ignored, "its header is not a Vulkan pipeline cache header");
}

TEST(PipelineCacheFile, OversizedFileIsNotRead) {
  TempDir dir("oversized");
  std::string path = (dir.path / "vk.bin").string();
  ASSERT_TRUE(write_pipeline_cache_file(path, cache_data(test_key(), 5000)));
  PipelineCacheRead r = read_bounded(path, /*max_bytes=*/4096);
  EXPECT_TRUE(r.data.empty());
  EXPECT_EQ(r.ignored, "larger than 4096 bytes");
  // A sparse file far past the default cap is refused by its size alone.
  fs::resize_file(path, uintmax_t(kMaxPipelineCacheBytes) * 4);
  EXPECT_EQ(read_bounded(path).ignored, "larger than " + std::to_string(kMaxPipelineCacheBytes) + " bytes");
}

TEST(PipelineCacheFile, UnwritableFolderIsNotAnError) {
  TempDir dir("unwritable");
  write_raw(dir.path / "file", {'x'});  // a file where the folder should be
  EXPECT_FALSE(write_pipeline_cache_file((dir.path / "file" / "vk.bin").string(), cache_data(test_key(), 8)));
}

// ---- A Vulkan session with each bad cache in place ----

namespace {


// x[1,256] -> Relu -> Neg -> y on the Vulkan backend; y checked.
void load_and_run_on_vulkan() {
  SessionOptions o;
  o.backend = BackendChoice::Vulkan;
  o.threads = 1;
  static const std::string model = [] {  // built here: the test needs no model files
    auto p = make_model(13);
    auto* g = p.mutable_graph();
    add_input(g, "x", {1, 256});
    add_node(g, "Relu", {"x"}, {"r"});
    add_node(g, "Neg", {"r"}, {"y"});
    set_type(g->add_output(), "y", {1, 256});
    return bytes_of(p);
  }();
  auto s = Session::load_bytes(model.data(), model.size(), o);
  ASSERT_NE(s->backend_name().find("vulkan"), std::string::npos) << s->backend_name();
  Tensor x(DType::Float32, {1, 256});
  for (int64_t i = 0; i < 256; ++i) x.data<float>()[i] = float(i) - 128.0f;
  auto y = s->run({{"x", x}})[0];
  for (int64_t i = 0; i < 256; ++i) ASSERT_EQ(y.data<float>()[i], -std::max(0.0f, float(i) - 128.0f)) << i;
}

}  // namespace

TEST(PipelineCacheFile, VulkanSessionRunsWithEachBadCacheInPlace) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  TempDir home("vulkan");
  // The cache folder is read when a Vulkan device is opened.
  kestrel::test::ScopedEnv env("XDG_CACHE_HOME", home.path.c_str());
  // Where this device's cache lives under the temporary cache home.
  std::string path = Context::open(runtime::Config::of({}).vulkan.device)->pipeline_cache_path();
  ASSERT_EQ(path.rfind(home.path.string(), 0), 0u) << path;
  const std::vector<std::pair<std::string, std::function<void()>>> bad = {
      {"directory", [&] { fs::create_directories(path); }},
      {"link to /dev/zero", [&] { fs::create_symlink("/dev/zero", path); }},
      {"FIFO", [&] { ASSERT_EQ(mkfifo(path.c_str(), 0600), 0); }},
      {"garbage", [&] { write_raw(path, std::vector<char>(3000, '\x5a')); }},
      {"truncated", [&] {
         ASSERT_TRUE(write_pipeline_cache_file(path, cache_data(test_key(), 4096)));
         fs::resize_file(path, 1000);
       }},
  };
  for (const auto& [what, plant] : bad) {
    SCOPED_TRACE(what);
    std::error_code ec;
    fs::remove_all(path, ec);
    fs::create_directories(fs::path(path).parent_path());
    plant();
    // A session opens its own device (none other is alive), reading the cache,
    // and writes its cache back when it goes.
    auto run = std::async(std::launch::async, [] { load_and_run_on_vulkan(); });
    if (run.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
      ADD_FAILURE() << "opening the device blocked on the cache";
      std::abort();  // (the blocked thread cannot be joined)
    }
    run.get();
  }
  // With the path free again, the session saves a sound cache there.
  fs::remove_all(path);
  load_and_run_on_vulkan();
  ASSERT_TRUE(fs::is_regular_file(path));
  auto saved = slurp(path);
  ASSERT_GE(saved.size(), 48u);
  PipelineCacheKey device;  // (the header names the device it was made for)
  std::memcpy(&device.vendor_id, saved.data() + 8, 4);
  std::memcpy(&device.device_id, saved.data() + 12, 4);
  std::memcpy(device.cache_uuid.data(), saved.data() + 16, 16);
  PipelineCacheRead r = read_pipeline_cache_file(path, device);
  EXPECT_EQ(r.ignored, "");
  EXPECT_EQ(r.data.size() + 16, saved.size());
}

// runtime::Config: a session's options completed from the environment,
// checked, and the only place below the apps that reads the environment.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "runtime/config.h"
#include "scoped_env.h"

using namespace kestrel;
using kestrel::test::ScopedEnv;
using ::testing::HasSubstr;

namespace {

// The message of the Error f throws ("" when it throws none).
template <typename F>
std::string message_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string error_of(const SessionOptions& o) {
  return message_of([&] { runtime::Config::of(o); });
}

}  // namespace

TEST(Config, TheEnvironmentFillsWhatTheOptionsLeaveOpen) {
  ScopedEnv precision("KESTREL_PRECISION", "fp16");
  ScopedEnv memory("KESTREL_VK_MEMORY_MB", "64");
  ScopedEnv heads("KESTREL_ENCODER_HEADS", "12");
  ScopedEnv trace("KESTREL_TRACE", "2");
  ScopedEnv chunk("KESTREL_ATTENTION_CHUNK", "4");
  ScopedEnv pool("KESTREL_POOL_MB", "7");
  ScopedEnv isa("KESTREL_CPU_ISA", "avx2");
  ScopedEnv cache("XDG_CACHE_HOME", "/tmp/kestrel-config-test");
  ScopedEnv kernels("KESTREL_CPU_KERNELS", "reference");
  ScopedEnv tiles("KESTREL_GEMM_TILES", "large");
  ScopedEnv coop("KESTREL_COOPMAT", "off");
  ScopedEnv attention("KESTREL_ATTENTION", "chunked");
  const runtime::Config c = runtime::Config::of({});
  EXPECT_EQ(c.vulkan.gemm_tiles, vulkan::GemmTiles::Large);
  EXPECT_EQ(c.vulkan.attention_kernel, vulkan::AttentionKernel::Chunked);
  EXPECT_FALSE(c.vulkan.device.coop_matrix);
  EXPECT_EQ(c.cpu_kernels, CpuKernels::Reference);
  EXPECT_EQ(c.vulkan.cpu_kernels, CpuKernels::Reference);  // the nodes a GPU leaves to the CPU
  EXPECT_EQ(c.vulkan.precision, backends::Precision::Fp16);
  EXPECT_EQ(c.vulkan.device_memory_bytes, size_t(64) << 20);
  EXPECT_EQ(c.claims.encoder_heads, 12);
  EXPECT_EQ(c.vulkan.trace, 2);
  EXPECT_EQ(c.vulkan.attention_chunk, 4);
  EXPECT_EQ(c.process.pool_cap_bytes, size_t(7) << 20);
  EXPECT_EQ(c.process.cpu_isa, CpuIsa::Avx2);
  EXPECT_EQ(c.vulkan.device.pipeline_cache_dir, "/tmp/kestrel-config-test/kestrel");
}

TEST(Config, TensorCoresAndTheGemmTileAreAutomaticByDefault) {
  const runtime::Config c = runtime::Config::of({});
  EXPECT_TRUE(c.vulkan.device.coop_matrix);  // used where the device offers what gemm_coop.comp needs
  EXPECT_EQ(c.vulkan.gemm_tiles, vulkan::GemmTiles::Auto);
  EXPECT_EQ(c.vulkan.attention_kernel, vulkan::AttentionKernel::Auto);
}

TEST(Config, TheSessionsOwnOptionsWinOverTheEnvironment) {
  ScopedEnv precision("KESTREL_PRECISION", "fp16");
  ScopedEnv memory("KESTREL_VK_MEMORY_MB", "64");
  ScopedEnv heads("KESTREL_ENCODER_HEADS", "12");
  ScopedEnv device("KESTREL_VK_DEVICE", "7");
  SessionOptions o;
  o.precision = Precision::Fp32;
  o.device_memory_mb = 128;
  o.encoder_heads = 6;
  o.vulkan_device = "llvmpipe";
  o.backend = BackendChoice::Cpu;
  o.threads = 3;
  const runtime::Config c = runtime::Config::of(o);
  EXPECT_EQ(c.vulkan.precision, backends::Precision::Fp32);
  EXPECT_EQ(c.vulkan.device_memory_bytes, size_t(128) << 20);
  {
    // The Vulkan tuning a session may set without the environment.
    ScopedEnv tiles("KESTREL_GEMM_TILES", "large");
    ScopedEnv chunk("KESTREL_ATTENTION_CHUNK", "4");
    ScopedEnv trace("KESTREL_TRACE", "2");
    ScopedEnv attention("KESTREL_ATTENTION", "chunked");
    SessionOptions t;
    t.gemm_tiles = vulkan::GemmTiles::Tiny;
    t.attention_kernel = vulkan::AttentionKernel::Flash;
    t.attention_chunk = 16;
    t.trace = 1;
    t.replay = false;
    const runtime::Config tuned = runtime::Config::of(t);
    EXPECT_EQ(tuned.vulkan.gemm_tiles, vulkan::GemmTiles::Tiny);
    EXPECT_EQ(tuned.vulkan.attention_kernel, vulkan::AttentionKernel::Flash);
    EXPECT_EQ(tuned.vulkan.attention_chunk, 16);
    EXPECT_EQ(tuned.vulkan.trace, 1);
    EXPECT_FALSE(tuned.vulkan.replay);
    EXPECT_TRUE(runtime::Config::of({}).vulkan.replay);
  }
  EXPECT_EQ(c.claims.encoder_heads, 6);
  EXPECT_EQ(c.vulkan.device.device, "llvmpipe");
  EXPECT_EQ(c.backend, BackendChoice::Cpu);
  EXPECT_EQ(c.threads, 3);
}

// The process's settings come from set_process_options where it set them,
// over the environment, and a field it left unset keeps the environment's.
TEST(Config, ProcessOptionsWinOverTheEnvironment) {
  ScopedEnv pool("KESTREL_POOL_MB", "7");
  ScopedEnv isa("KESTREL_CPU_ISA", "avx2");
  ScopedEnv poison("KESTREL_POISON_OUTPUTS", "1");
  ProcessOptions p;
  p.pool_mb = 64;
  p.cpu_isa = CpuIsa::Baseline;
  set_process_options(p);
  runtime::Config c = runtime::Config::of({});
  EXPECT_EQ(c.process.pool_cap_bytes, size_t(64) << 20);
  EXPECT_EQ(c.process.cpu_isa, CpuIsa::Baseline);
  EXPECT_TRUE(c.process.poison_outputs);  // not set: the environment's
  p = ProcessOptions{};
  p.poison_outputs = false;
  set_process_options(p);
  c = runtime::Config::of({});
  EXPECT_EQ(c.process.pool_cap_bytes, size_t(7) << 20);
  EXPECT_EQ(c.process.cpu_isa, CpuIsa::Avx2);
  EXPECT_FALSE(c.process.poison_outputs);
  p.pool_mb = -2;
  EXPECT_THROW(set_process_options(p), Error);
  set_process_options(ProcessOptions{});
}

TEST(Config, ABadValueNamesItsVariableOrOption) {
  {
    ScopedEnv v("KESTREL_TRACE", "loud");
    EXPECT_THAT(error_of({}), HasSubstr("KESTREL_TRACE must be a whole number from 0 to 2, got 'loud'"));
  }
  {
    ScopedEnv v("KESTREL_PRECISION", "fp8");
    EXPECT_THAT(error_of({}), HasSubstr("KESTREL_PRECISION must be one of auto, fp32, fp16, got 'fp8'"));
  }
  {
    ScopedEnv v("KESTREL_VK_MEMORY_MB", "12abc");
    EXPECT_THAT(error_of({}), HasSubstr("KESTREL_VK_MEMORY_MB must be a whole number"));
  }
  {
    ScopedEnv v("KESTREL_CPU_KERNELS", "fastest");
    EXPECT_THAT(error_of({}), HasSubstr("KESTREL_CPU_KERNELS must be one of fast, reference, got 'fastest'"));
  }
  {
    ScopedEnv v("KESTREL_GEMM_TILES", "huge");
    EXPECT_THAT(error_of({}), HasSubstr("KESTREL_GEMM_TILES must be one of auto, tiny, small, wide, large, got 'huge'"));
  }
  {
    ScopedEnv v("KESTREL_ATTENTION", "fast");
    EXPECT_THAT(error_of({}), HasSubstr("KESTREL_ATTENTION must be one of auto, flash, chunked, got 'fast'"));
  }
  {
    ScopedEnv v("KESTREL_FAMILIES", "maybe");
    EXPECT_THAT(error_of({}), HasSubstr("KESTREL_FAMILIES must be one of on, off, 1, 0, got 'maybe'"));
  }
  // Backend and precision names are parsed at the edges (CLI, C API, Python).
  EXPECT_THAT(message_of([] { parse_backend("tpu"); }), HasSubstr("unknown backend 'tpu' (this build has: auto, cpu, vulkan)"));
  EXPECT_THAT(message_of([] { parse_precision("half"); }), HasSubstr("unknown precision 'half' (use fp32, fp16 or auto)"));
  for (BackendChoice b : {BackendChoice::Auto, BackendChoice::Cpu, BackendChoice::Vulkan})
    EXPECT_EQ(parse_backend(name_of(b)), b);
  for (Precision p : {Precision::Auto, Precision::Fp32, Precision::Fp16}) EXPECT_EQ(parse_precision(name_of(p)), p);
  EXPECT_THAT(message_of([] { parse_cpu_kernels("slow"); }), HasSubstr("unknown CPU kernels 'slow' (use fast or reference)"));
  for (CpuKernels k : {CpuKernels::Fast, CpuKernels::Reference}) EXPECT_EQ(parse_cpu_kernels(name_of(k)), k);
  SessionOptions o;
  o.threads = -1;
  EXPECT_THAT(error_of(o), HasSubstr("threads must be 0"));
  o = {};
  o.encoder_heads = -2;
  EXPECT_THAT(error_of(o), HasSubstr("encoder_heads must be 0"));
  o = {};
  o.trace = 3;
  EXPECT_THAT(error_of(o), HasSubstr("trace must be 0, 1 or 2, got 3"));
  o = {};
  o.attention_chunk = -1;
  EXPECT_THAT(error_of(o), HasSubstr("attention_chunk must be 0 (no cap) or more, got -1"));
}

// Configuration is built once in runtime/ and passed down: a getenv below
// it would be a setting no session can make. (The apps, above runtime/, may
// read their own variables.)
TEST(Config, NothingBelowRuntimeReadsTheEnvironment) {
  namespace fs = std::filesystem;
  const fs::path src = fs::path(KESTREL_SOURCE_DIR) / "src";
  int files = 0;
  std::string readers;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), src).string();
    if (rel.rfind("runtime/", 0) == 0 || rel.rfind("apps/", 0) == 0) continue;
    std::ifstream f(e.path());
    std::stringstream text;
    text << f.rdbuf();
    ++files;
    if (text.str().find("getenv") != std::string::npos) readers += " " + rel;
  }
  EXPECT_GT(files, 100);  // the walk saw the tree
  EXPECT_EQ(readers, "") << "these read the environment below runtime/:" << readers;
}

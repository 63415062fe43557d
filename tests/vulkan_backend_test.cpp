// The Vulkan backend as a whole (on lavapipe in CI): sub-allocated memory,
// the pipeline cache on disk, barriers only between dependent dispatches,
// placement reports, CPU fallback with reasons, and flat memory over 10,000
// runs. Without a Vulkan device these fail; KESTREL_VULKAN_TESTS=off skips.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "backends/vulkan/auto_precision.h"
#include "backends/vulkan/context.h"
#include "backends/vulkan/graph_runner.h"
#include "backends/vulkan/memory.h"
#include "onnx/loader.h"
#include "onnx_builders.h"
#include "runtime/session.h"
#include "vulkan_test_models.h"
#include "scoped_env.h"
#include "vulkan_tests_switch.h"
#include "runtime/config.h"

using namespace kestrel;
using namespace kestrel::test;

namespace {

size_t resident_kb() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, rss = 0;
  f >> pages >> rss;
  return rss * size_t(sysconf(_SC_PAGESIZE)) / 1024;
}

}  // namespace

TEST(VulkanBackend, RunsAChainOnTheGpuWithBarriersOnlyWhereNeeded) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const int64_t n = 10000;
  auto s = vulkan_session(chain_model(n));
  auto out = s->run({{"x", ramp(n)}});
  auto p = s->placement();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->gpu_nodes, 5);
  EXPECT_EQ(p->cpu_nodes, 0);
  EXPECT_DOUBLE_EQ(p->gpu_flops_share(), 1.0);
  EXPECT_EQ(p->submits, 1u);  // one command buffer for the whole run
  // A barrier before each op that reads its predecessor's output (Relu after
  // the upload, Add, Sigmoid, Mul) and none before Neg, which only reads the
  // input -- unless Neg's output reuses memory Sigmoid just read (a
  // write-after-read hazard), which needs one. Six would mean one per op.
  EXPECT_EQ(p->dispatches, 5u);
  EXPECT_GE(p->barriers, 4u);
  EXPECT_LE(p->barriers, 5u);
  Tensor x = ramp(n);
  float bias_scale = 0.25f;
  for (int64_t i = 0; i < n; ++i) {
    float xi = x.data<float>()[i];
    float a = std::max(xi, 0.0f) + float(i % 7) * bias_scale - 0.5f;
    float want = 1.0f / (1.0f + std::exp(-a)) * -xi;
    ASSERT_NEAR(out[0].data<float>()[i], want, 1e-6f) << i;
  }
}

TEST(VulkanBackend, NodesWithoutAKernelRunOnTheCpuAndTheReasonIsCounted) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto s = vulkan_session(chain_model(10000, /*with_topk=*/true));
  auto verdicts = s->partition();
  ASSERT_EQ(verdicts.size(), 6u);
  EXPECT_FALSE(verdicts[5].supported);
  EXPECT_THAT(verdicts[5].reason, ::testing::HasSubstr("TopK"));
  auto out = s->run({{"x", ramp(10000)}});
  ASSERT_EQ(out[0].shape(), (Shape{1, 3}));
  auto p = s->placement();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->gpu_nodes, 5);
  EXPECT_EQ(p->cpu_nodes, 1);
  EXPECT_EQ(p->cpu_reasons.at("no Vulkan kernel for TopK"), 1);
  EXPECT_LT(p->gpu_flops_share(), 1.0);
  EXPECT_GT(p->gpu_flops_share(), 0.5);
  EXPECT_THAT(s->placement_summary(), ::testing::HasSubstr("no Vulkan kernel for TopK"));
}

TEST(VulkanBackend, Float16StorageStaysCloseToFloat32) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto s32 = vulkan_session(chain_model(10000), "fp32");
  auto s16 = vulkan_session(chain_model(10000), "fp16");
  auto a = s32->run({{"x", ramp(10000)}})[0];
  s16->run({{"x", ramp(10000)}});  // the first run calibrates in float32 (precision_plan.h)
  EXPECT_THAT(s16->placement()->precision_note, ::testing::HasSubstr("5 of 5 GPU nodes in fp16"));
  auto b = s16->run({{"x", ramp(10000)}})[0];
  ASSERT_EQ(b.dtype(), DType::Float32);  // the caller sees the model's types
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 4e-3f) << i;
}

// Inputs and outputs of 8 MB or more convert between float32 and the run's
// storage on several threads (transfer.cpp): an 8.8 MB input and output, in
// float32 and float16 runs, recorded and replayed, give on two threads what
// they give on one, bit for bit, and what the chain computes.
TEST(VulkanBackend, LargeTransfersSplitOverThreadsGiveTheSameAnswer) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const int64_t n = 2200000;  // 8.8 MB of float32: past the 8 MB from which transfers split
  const std::string model = chain_model(n);
  const Tensor x = ramp(n);
  for (const char* precision : {"fp32", "fp16"}) {
    std::vector<Tensor> outs;
    for (int threads : {1, 2}) {
      SessionOptions o;
      o.backend = BackendChoice::Vulkan;
      o.precision = parse_precision(precision);
      o.threads = threads;
      auto s = Session::load_bytes(model.data(), model.size(), o);
      Tensor y;
      for (int r = 0; r < 4; ++r) y = s->run({{"x", x}})[0];
      EXPECT_TRUE(s->placement()->replayed) << precision << ", " << threads << " threads";
      outs.push_back(y);
    }
    ASSERT_EQ(outs[0].nbytes(), outs[1].nbytes());
    EXPECT_EQ(std::memcmp(outs[0].raw(), outs[1].raw(), outs[0].nbytes()), 0) << precision << ": threads changed bits";
    // y = sigmoid(relu(x) + bias) * -x, bias = (i % 7) / 4 - 1/2; float16 storage rounds each step.
    const float tol = std::string(precision) == "fp16" ? 4e-3f : 1e-5f;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float xi = x.data<float>()[i], b = float(i % 7) * 0.25f - 0.5f;
      const float want = -xi / (1.f + std::exp(-(std::max(xi, 0.f) + b)));
      bad += std::abs(outs[1].data<float>()[i] - want) > tol;
    }
    EXPECT_EQ(bad, 0) << precision;
  }
}

TEST(VulkanBackend, TensorsShareLargeBlocks) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto ctx = vulkan::Context::open(runtime::Config::of({}).vulkan.device);
  vulkan::Allocator alloc(*ctx, vulkan::MemoryKind::Device);
  std::vector<vulkan::Allocation> all;
  for (int i = 0; i < 200; ++i) all.push_back(alloc.allocate(size_t(1000 + 37 * i) * 4));
  EXPECT_EQ(alloc.blocks(), 1u);  // 200 tensors, one vkAllocateMemory
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j)
      ASSERT_TRUE(all[i].offset + all[i].size <= all[j].offset || all[j].offset + all[j].size <= all[i].offset);
  for (auto& a : all) alloc.release(a);
  // Freed ranges coalesce: a tensor as large as the whole block fits again.
  vulkan::Allocation big = alloc.allocate(alloc.reserved_bytes());
  EXPECT_EQ(alloc.blocks(), 1u);
  EXPECT_EQ(big.offset, 0u);
  alloc.release(big);
}

TEST(VulkanBackend, PipelineCacheIsWrittenUnderXdgCacheHome) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  std::string dir = std::filesystem::temp_directory_path() / ("kestrel_cache_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::string path;
  {
    kestrel::test::ScopedEnv env("XDG_CACHE_HOME", dir.c_str());
    auto s = vulkan_session(chain_model(10000));
    s->run({{"x", ramp(10000)}});
  }  // the cache is saved when the device closes
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir + "/kestrel")) {
    EXPECT_THAT(e.path().filename().string(), ::testing::StartsWith("vk-"));
    EXPECT_GT(std::filesystem::file_size(e.path()), 0u);
    ++files;
  }
  EXPECT_EQ(files, 1u);
  std::filesystem::remove_all(dir);
}

// Descriptor sets, command buffers and memory are reused: 10,000 runs leave
// host and device memory where the first hundred put them.
TEST(VulkanBackend, TenThousandRunsKeepMemoryFlat) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const int64_t n = 8192;
  auto s = vulkan_session(chain_model(n));
  Tensor x = ramp(n);
  for (int i = 0; i < 100; ++i) s->run({{"x", x}});
  size_t rss0 = resident_kb();
  size_t dev0 = s->placement()->device_bytes;
  for (int i = 0; i < 10000; ++i) s->run({{"x", x}});
  size_t rss1 = resident_kb();
  size_t dev1 = s->placement()->device_bytes;
  std::printf("10,000 runs: host RSS %zu -> %zu KiB, device memory %zu -> %zu bytes\n", rss0, rss1, dev0, dev1);
  EXPECT_EQ(dev1, dev0);
  EXPECT_LT(rss1, rss0 + 2048) << "host memory grew by " << (rss1 - rss0) << " KiB over 10,000 runs";
}

// Precision "auto" keeps float16 only when some node can keep it and a mixed
// run agrees with float32 (and then only if a warm run of it is faster,
// which depends on the machine).
// (On lavapipe, a CPU device, "auto" itself means float32, so the two
// compiled graphs are built here directly.)
TEST(VulkanBackend, AutoPrecisionKeepsFloat16OnlyWhenItAgrees) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  for (float scale : {1.0f, 1e5f}) {  // 1e5: the chain's values pass float16's 65504
    const int64_t n = 10000;
    auto model = onnx_io::load_model_bytes(chain_model(n).data(), chain_model(n).size(), "");
    auto ctx = vulkan::Context::open(runtime::Config::of({}).vulkan.device);
    backends::VulkanOptions vo;
    vo.keep_small_host_work = false;
    vulkan::AutoPrecisionCompiled c(std::make_unique<vulkan::VulkanCompiled>(ctx, model.graph, false, vo),
                                    std::make_unique<vulkan::VulkanCompiled>(ctx, model.graph, true, vo));
    Tensor x = ramp(n);
    for (int64_t i = 0; i < n; ++i) x.data<float>()[i] *= scale;
    backends::RunOptions ro;
    c.run({x}, ro);
    auto p = c.placement();
    ASSERT_TRUE(p);
    if (scale == 1.0f) {
      EXPECT_THAT(p->precision_note, ::testing::HasSubstr("fp16 agreed with fp32")) << p->precision_note;
      bool half = p->precision_note.find("auto: fp16") != std::string::npos;
      EXPECT_THAT(p->device, ::testing::HasSubstr(half ? "fp16 storage" : "fp32 storage"));
    } else {
      EXPECT_THAT(p->precision_note, ::testing::HasSubstr("auto: fp32 (fp16 on the first run: no node kept fp16"))
          << p->precision_note;
      EXPECT_THAT(p->device, ::testing::HasSubstr("fp32 storage"));
    }
  }
}

// Bad input on the GPU path is an error naming the node, as on the CPU: an
// out-of-range Gather index is not clamped into a silently wrong answer.
TEST(VulkanBackend, OutOfRangeGatherIndexIsAnErrorNamingTheNode) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  g->set_name("gather");
  add_input(g, "x", {5, 4000});
  add_int64_initializer(g, "idx", {1, 7});  // axis 0 has 5 rows
  add_node(g, "Gather", {"x", "idx"}, {"y"}, "pick_rows");
  add_output(g, "y");
  std::string bytes = bytes_of(m);
  auto s = vulkan_session(bytes);
  try {
    s->run({{"x", Tensor(DType::Float32, {5, 4000})}});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("pick_rows"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("index 7 is out of range"));
  }
}

namespace {

// A graph the placement walk leaves wholly on the CPU (four elements: small
// host tensors) runs again through the CPU executor directly: each repeat
// gives the CPU backend's result to the bit, and the report still says where
// the nodes ran. A graph with GPU nodes keeps the walk on every run.
TEST(VulkanBackend, AllCpuGraphRepeatsThroughTheCpuExecutor) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto gpu = vulkan_session(chain_model(4));
  SessionOptions co;
  co.backend = BackendChoice::Cpu;
  auto cpu = Session::load_bytes(chain_model(4).data(), chain_model(4).size(), co);
  for (int run = 0; run < 3; ++run) {
    Tensor x = Tensor::from_f32({1, 4}, {-1.5f + run, 0.25f * run, 2.f, -0.125f});
    auto ours = gpu->run({{"x", x}});
    auto ref = cpu->run({{"x", x}});
    ASSERT_EQ(ours.size(), ref.size());
    for (size_t i = 0; i < ours.size(); ++i) EXPECT_TRUE(ours[i].same_as(ref[i])) << "run " << run << " output " << i;
    auto p = gpu->placement();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->gpu_nodes, 0) << "run " << run;
    EXPECT_EQ(p->cpu_nodes, 5) << "run " << run;
  }
  auto big = vulkan_session(chain_model(10000));
  for (int run = 0; run < 2; ++run) {
    big->run({{"x", ramp(10000)}});
    EXPECT_EQ(big->placement()->gpu_nodes, 5) << "run " << run;
  }
}

}  // namespace

// Exact-buffer mode (for the validation layer's bounds checks): every tensor
// its own VkBuffer over its range of a block. Hazards are found by memory,
// not by buffer, so a range reused within the run still gets its barrier:
// the same barriers and the same bits as the shared-block mode.
TEST(VulkanBackend, ExactBuffersKeepBarriersAndResults) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const int64_t n = 10000;
  auto shared = vulkan_session(chain_model(n));
  SessionOptions o;
  o.backend = BackendChoice::Vulkan;
  o.precision = Precision::Fp32;
  o.threads = 1;
  o.exact_buffers = true;
  std::string bytes = chain_model(n);
  auto exact = Session::load_bytes(bytes.data(), bytes.size(), o);
  for (int run = 0; run < 3; ++run) {  // later runs reuse the freed ranges
    auto a = shared->run({{"x", ramp(n)}});
    auto b = exact->run({{"x", ramp(n)}});
    ASSERT_EQ(0, std::memcmp(a[0].raw(), b[0].raw(), size_t(n) * 4)) << "run " << run;
    EXPECT_EQ(shared->placement()->barriers, exact->placement()->barriers) << "run " << run;
    EXPECT_EQ(exact->placement()->dispatches, 5u);
  }
}

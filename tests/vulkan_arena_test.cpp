// Static memory planning on the device (backends/arena_plan.h): the first
// run of an input signature records, later runs lay their device tensors
// out in one planned arena. A planned run must give the recorded run's bits.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "backends/vulkan/context.h"
#include "backends/vulkan/memory.h"
#include "core/compare.h"
#include "onnx_builders.h"
#include "real_models.h"
#include "runtime/session.h"
#include "vulkan_tests_switch.h"
#include "runtime/config.h"

using namespace kestrel;
using namespace kestrel::test;

namespace {

// x[1,n] -> Relu -> r, flattened to v, which outlives r (a view) while
// Sigmoid and Neg make tensors of r's size; then TopK, which has no Vulkan
// kernel, makes 15,000 values on the host, uploaded for the Neg after it
// (n is well above the 4,096 elements below which host work stays on the host).
std::string views_and_uploads_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, "n"});
  add_int64_initializer(g, "flat", {-1});
  add_int64_initializer(g, "row", {1, -1});
  add_int64_initializer(g, "k", {15000});
  add_node(g, "Relu", {"x"}, {"r"}, "relu");
  add_node(g, "Reshape", {"r", "flat"}, {"v"}, "flatten");
  add_node(g, "Sigmoid", {"x"}, {"s"}, "sigmoid");
  add_node(g, "Neg", {"s"}, {"ng"}, "neg");
  add_node(g, "Reshape", {"v", "row"}, {"w"}, "unflatten");
  add_node(g, "Add", {"w", "ng"}, {"a"}, "add");
  add_node(g, "TopK", {"a", "k"}, {"top", "top_i"}, "topk");
  add_node(g, "Neg", {"top"}, {"t"}, "neg_top");
  add_node(g, "Mul", {"a", "a"}, {"y"}, "square");
  add_output(g, "y");
  add_output(g, "t");
  return bytes_of(m);
}

Tensor ramp(int64_t n, float shift) {
  Tensor t(DType::Float32, {1, n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = float((i * 37) % 101) / 25.0f - 2.0f + shift;
  return t;
}

std::unique_ptr<Session> session(const std::string& bytes, const std::string& backend) {
  SessionOptions o;
  o.backend = parse_backend(backend);
  o.precision = Precision::Fp32;
  o.threads = 2;
  return Session::load_bytes(bytes.data(), bytes.size(), o);
}

void expect_same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].same_as(b[i])) << what << ", output " << i;
}

TEST(VulkanArena, PlannedRunsGiveTheRecordedBitsAcrossSignatures) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const std::string bytes = views_and_uploads_model();
  auto gpu = session(bytes, "vulkan");
  auto cpu = session(bytes, "cpu");
  for (int64_t n : {30000, 50000, 30000}) {
    Tensor x = ramp(n, 0.01f * float(n / 10000));
    auto first = gpu->run({{"x", x}});
    const size_t first_arena = gpu->placement()->device_arena_bytes;
    for (int k = 0; k < 2; ++k) {
      auto again = gpu->run({{"x", x}});
      ASSERT_GT(gpu->placement()->device_arena_bytes, 0u) << "n " << n << ": the run after a recording is planned";
      expect_same_bits(again, first, "n " + std::to_string(n));
    }
    // The signature seen first is still planned when it comes back.
    if (n == 30000 && first_arena) EXPECT_EQ(first_arena, gpu->placement()->device_arena_bytes);
    auto want = cpu->run({{"x", x}});
    for (size_t i = 0; i < want.size(); ++i) {
      Agreement a = agreement(first[i], want[i]);
      EXPECT_GE(a.cosine, 0.99999) << "n " << n << ", output " << i;
      EXPECT_LE(a.max_abs, 1e-5) << "n " << n << ", output " << i;
    }
    EXPECT_GT(gpu->placement()->gpu_nodes, 0);
    EXPECT_GT(gpu->placement()->cpu_nodes, 0) << "TopK stays on the CPU: its output is uploaded";
  }
}

TEST(VulkanArena, RealModelsRepeatBitForBitInLessDeviceMemory) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const std::string dir = real_models::models_dir();
  int checked = 0;
  for (const auto& m : real_models::all()) {
    if (m.name != "blazeface_front_128" && m.name != "mlsd_tiny_320") continue;
    const std::string path = dir + "/" + m.file;
    ASSERT_TRUE(std::filesystem::is_regular_file(path)) << path << " is missing: run scripts/fetch_models.sh";
    SessionOptions o;
    o.backend = BackendChoice::Vulkan;
    o.precision = Precision::Fp32;
    auto s = Session::load(path, o);
    auto in = m.inputs(dir);
    auto first = s->run(in);
    const auto recorded = *s->placement();
    auto again = s->run(in);
    const auto planned = *s->placement();
    expect_same_bits(again, first, m.name);
    EXPECT_EQ(recorded.device_arena_bytes, 0u);
    EXPECT_GT(planned.device_arena_bytes, 0u);
    std::printf("%s: device tensors %zu bytes recorded (first fit), %zu planned (arena %zu); device memory held %zu\n",
                m.name.c_str(), recorded.device_tensor_peak_bytes, planned.device_tensor_peak_bytes,
                planned.device_arena_bytes, planned.device_bytes);
    EXPECT_LE(planned.device_tensor_peak_bytes, recorded.device_tensor_peak_bytes) << m.name;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

TEST(VulkanAllocator, BlocksGrowFromFourMiBAndEmptyOnesAreFreed) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto ctx = vulkan::Context::open(runtime::Config::of({}).vulkan.device);
  vulkan::Allocator alloc(*ctx, vulkan::MemoryKind::Device);
  auto a = alloc.allocate(size_t(3) << 20);
  EXPECT_EQ(alloc.reserved_bytes(), size_t(4) << 20) << "a small model holds a few MiB, not 64";
  auto b = alloc.allocate(size_t(3) << 20);  // does not fit the first: the next block is twice as large
  EXPECT_EQ(alloc.reserved_bytes(), size_t(12) << 20);
  EXPECT_EQ(alloc.high_water_bytes(), size_t(6) << 20);
  alloc.release(a);
  alloc.release_empty_blocks();
  EXPECT_EQ(alloc.reserved_bytes(), size_t(8) << 20) << "the empty block is freed, the used one kept";
  alloc.release(b);
  alloc.release_empty_blocks();
  EXPECT_EQ(alloc.reserved_bytes(), 0u);
  auto big = alloc.allocate(size_t(100) << 20);  // one block of its own size
  EXPECT_EQ(alloc.reserved_bytes(), size_t(100) << 20);
  alloc.release(big);
}

}  // namespace

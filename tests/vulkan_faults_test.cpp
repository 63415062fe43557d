// What the Vulkan backend does when the device says no: past the session's
// memory budget or out of device memory, a node runs on the CPU; a pipeline
// that fails to build sends its node to the CPU; a lost device moves the
// whole graph to the CPU. Each case gives the right answer and says so in the
// placement report. Faults are injected where the driver would report them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "backends/vulkan/context.h"
#include "backends/vulkan/graph_runner.h"
#include "onnx/loader.h"
#include "runtime/session.h"
#include "vulkan_test_models.h"
#include "runtime/config.h"

using namespace kestrel;
using kestrel::test::matmul_chain;
using kestrel::test::matmul_chain_input;
using ::testing::HasSubstr;

namespace {

constexpr int64_t kN = 256;  // each weight and activation: 256 KiB
constexpr int kLayers = 4;

std::vector<Tensor> cpu_reference() {
  std::string bytes = matmul_chain(kN, kLayers);
  SessionOptions o;
  o.backend = BackendChoice::Cpu;
  o.threads = 1;
  return Session::load_bytes(bytes.data(), bytes.size(), o)->run({{"x", matmul_chain_input(kN)}});
}

// Within float32 reassociation of four products of length 256 (values near
// 1, each product adding a few ulps).
void expect_close(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, double(std::fabs(got.data<float>()[i] - want.data<float>()[i])));
  EXPECT_LT(worst, 1e-5);
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), size_t(a.numel()) * 4) == 0;
}

int reasons_with(const backends::PlacementReport& p, const std::string& text) {
  int n = 0;
  for (auto& [why, count] : p.cpu_reasons)
    if (why.find(text) != std::string::npos) n += count;
  return n;
}

std::string reasons(const backends::PlacementReport& p) {
  std::string s;
  for (auto& [why, count] : p.cpu_reasons) s += std::to_string(count) + "x " + why + "\n";
  return s;
}

SessionOptions vulkan_with_budget(int64_t mb) {
  SessionOptions o;
  o.backend = BackendChoice::Vulkan;
  o.precision = Precision::Fp32;
  o.threads = 1;
  o.device_memory_mb = mb;
  return o;
}

struct Compiled {
  onnx_io::Model model;
  std::shared_ptr<vulkan::Context> ctx = vulkan::Context::open(runtime::Config::of({}).vulkan.device);  // its own device: faults stay here
  std::unique_ptr<vulkan::VulkanCompiled> graph;
  explicit Compiled(const backends::VulkanOptions& vo = {}) : model(load()) {
    graph = std::make_unique<vulkan::VulkanCompiled>(ctx, model.graph, false, vo);
  }
  static onnx_io::Model load() {
    std::string bytes = matmul_chain(kN, kLayers);
    return onnx_io::load_model_bytes(bytes.data(), bytes.size(), "");
  }
  std::vector<Tensor> run() { return graph->run({matmul_chain_input(kN)}, backends::RunOptions{}); }
};

}  // namespace

TEST(VulkanFaults, PastTheMemoryBudgetNodesRunOnTheCpu) {
  // 1 MiB holds the four weights (256 KiB each) but not the activations too.
  SessionOptions o = vulkan_with_budget(1);
  std::string bytes = matmul_chain(kN, kLayers);
  auto s = Session::load_bytes(bytes.data(), bytes.size(), o);
  auto got = s->run({{"x", matmul_chain_input(kN)}});
  expect_close(got[0], cpu_reference()[0]);
  auto p = s->placement();
  ASSERT_TRUE(p);
  EXPECT_GT(reasons_with(*p, "device memory budget"), 0) << reasons(*p);
  EXPECT_LE(p->device_bytes, size_t(1) << 20);
}

TEST(VulkanFaults, ABudgetThatHoldsNothingRunsEverythingOnTheCpu) {
  SessionOptions o = vulkan_with_budget(1);
  std::string bytes = matmul_chain(1024, 2);  // 4 MiB weights: none fits
  auto s = Session::load_bytes(bytes.data(), bytes.size(), o);
  auto got = s->run({{"x", matmul_chain_input(1024)}});
  o.backend = BackendChoice::Cpu;
  auto want = Session::load_bytes(bytes.data(), bytes.size(), o)->run({{"x", matmul_chain_input(1024)}});
  EXPECT_TRUE(bitwise_equal(got[0], want[0]));
  auto p = s->placement();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->gpu_nodes, 0) << reasons(*p);
  EXPECT_EQ(reasons_with(*p, "does not fit the session's 1 MiB device memory budget"), 2) << reasons(*p);
}

TEST(VulkanFaults, NegativeBudgetIsRefusedNamingTheOption) {
  SessionOptions o;
  o.backend = BackendChoice::Vulkan;
  o.device_memory_mb = -1;
  std::string bytes = matmul_chain(8, 1);
  try {
    Session::load_bytes(bytes.data(), bytes.size(), o);
    ADD_FAILURE() << "a negative budget was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("device_memory_mb"));
  }
}

TEST(VulkanFaults, OutOfDeviceMemoryMovesTheNodeToTheCpu) {
  Compiled c;
  c.ctx->inject(vulkan::Fault::OutOfDeviceMemory);  // the run's first new block
  auto got = c.run();
  expect_close(got[0], cpu_reference()[0]);
  auto p = c.graph->placement();
  ASSERT_TRUE(p);
  EXPECT_EQ(reasons_with(*p, "out of device memory"), 1) << reasons(*p);
  EXPECT_EQ(p->gpu_nodes, kLayers - 1);
  // The next run finds memory again.
  c.run();
  EXPECT_EQ(c.graph->placement()->gpu_nodes, kLayers);
}

TEST(VulkanFaults, APipelineThatFailsToBuildMovesItsNodeToTheCpu) {
  Compiled c;
  c.ctx->inject(vulkan::Fault::PipelineBuild);
  auto got = c.run();
  expect_close(got[0], cpu_reference()[0]);
  auto p = c.graph->placement();
  ASSERT_TRUE(p);
  EXPECT_EQ(reasons_with(*p, "building the pipeline for shader"), 1) << reasons(*p);
  EXPECT_EQ(p->gpu_nodes, kLayers - 1);
}

TEST(VulkanFaults, ALostDeviceMovesTheWholeGraphToTheCpu) {
  std::vector<Tensor> want = cpu_reference();
  Compiled c;
  c.ctx->inject(vulkan::Fault::DeviceLost);
  for (int run = 0; run < 2; ++run) {  // the run that lost it, and one after
    auto got = c.run();
    EXPECT_TRUE(bitwise_equal(got[0], want[0])) << "run " << run;
    auto p = c.graph->placement();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->gpu_nodes, 0);
    EXPECT_EQ(reasons_with(*p, "was lost"), kLayers) << reasons(*p);
  }
  EXPECT_TRUE(c.ctx->lost());
}

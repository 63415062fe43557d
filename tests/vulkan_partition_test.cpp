// The Vulkan partition (partition/partition.h, with the Vulkan rules in backends/vulkan/partition.h): the static placement is
// known before any run; what a run finds at an input signature is learned
// once, followed by later runs at that signature, and kept per signature.
// Without a Vulkan device these fail; KESTREL_VULKAN_TESTS=off skips.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "backends/vulkan/graph_runner.h"
#include "cli_helpers.h"
#include "onnx/loader.h"
#include "onnx_builders.h"
#include "runtime/config.h"
#include "runtime/session.h"
#include "vulkan_test_models.h"
#include "vulkan_tests_switch.h"

using namespace kestrel;
using namespace kestrel::test;
using vulkan::Learned;

namespace {

// x[1,1,h,w] -> MaxPool 2x2 with its Indices output, which the Vulkan kernel
// refuses when it records (the node runs on the CPU), -> Relu on the GPU.
std::string pool_with_indices(int64_t h, int64_t w) {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  g->set_name("pool_indices");
  add_input(g, "x", {1, 1, h, w});
  auto* p = add_node(g, "MaxPool", {"x"}, {"p", "idx"}, "pool");
  set_ints(p, "kernel_shape", {2, 2});
  set_ints(p, "strides", {2, 2});
  add_node(g, "Relu", {"p"}, {"y"}, "relu");
  add_output(g, "y");
  add_output(g, "idx");
  return bytes_of(m);
}

Tensor grid(int64_t h, int64_t w) {
  Tensor t(DType::Float32, {1, 1, h, w});
  for (int64_t i = 0; i < h * w; ++i) t.data<float>()[i] = float(i % 17) / 4.0f - 2.0f;
  return t;
}

struct Compiled {
  onnx_io::Model model;
  std::unique_ptr<vulkan::VulkanCompiled> graph;
};

Compiled compile(const std::string& bytes, const backends::VulkanOptions& vo = {}) {
  Compiled c{onnx_io::load_model_bytes(bytes.data(), bytes.size(), ""), nullptr};
  auto ctx = vulkan::Context::open(runtime::Config::of({}).vulkan.device);
  c.graph = std::make_unique<vulkan::VulkanCompiled>(ctx, c.model.graph, false, vo);
  return c;
}

}  // namespace

TEST(VulkanPartition, PlacementIsKnownBeforeAnyRun) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto s = vulkan_session(chain_model(10000, /*with_topk=*/true));
  EXPECT_FALSE(s->placement()) << "nothing has run";
  auto planned = s->planned_placement();
  ASSERT_TRUE(planned);
  EXPECT_FALSE(planned->ran);
  EXPECT_EQ(planned->gpu_nodes, 5);
  EXPECT_EQ(planned->cpu_nodes, 1);
  EXPECT_EQ(planned->cpu_reasons.at("no Vulkan kernel for TopK"), 1);
  EXPECT_EQ(planned->dispatches, 0u);
  EXPECT_THAT(planned->summary(), ::testing::HasSubstr("before a run"));
  // A run of a graph whose kernels all accept their shapes lands where the plan said.
  s->run({{"x", ramp(10000)}});
  auto ran = s->placement();
  ASSERT_TRUE(ran);
  EXPECT_TRUE(ran->ran);
  EXPECT_EQ(ran->gpu_nodes, planned->gpu_nodes);
  EXPECT_EQ(ran->cpu_reasons, planned->cpu_reasons);
}

// The static partition cannot see a refusal at record time or small host
// work: the first run at a signature learns them, later runs follow.
TEST(VulkanPartition, FirstRunAtASignatureTeachesTheRunsAfterIt) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  Compiled c = compile(pool_with_indices(128, 192));
  const vulkan::Partition& part = c.graph->partition();
  ASSERT_TRUE(part.kernel(0)) << "MaxPool has a Vulkan kernel: only a run finds it refuses Indices";
  EXPECT_EQ(c.graph->planned_placement()->gpu_nodes, 2);
  backends::RunOptions ro;
  const Tensor x = grid(128, 192);  // the pooled 64x96 is past the small-host bound of 4,096 elements
  EXPECT_FALSE(part.learned(partition::signature_of({x})));
  auto first = c.graph->run({x}, ro);
  auto verdicts = part.learned(partition::signature_of({x}));
  ASSERT_TRUE(verdicts);
  ASSERT_EQ(verdicts->node.size(), 2u);
  EXPECT_EQ(verdicts->node[0], Learned::Cpu);
  EXPECT_THAT(verdicts->why[0], ::testing::HasSubstr("Indices"));
  EXPECT_EQ(verdicts->node[1], Learned::Gpu);
  EXPECT_FALSE(verdicts->all_cpu());
  const backends::PlacementReport learned_run = *c.graph->placement();
  EXPECT_EQ(learned_run.gpu_nodes, 1);

  // The same signature again: the learned verdicts, the same placement and
  // report, the same results to the bit; nothing new is learned.
  auto again = c.graph->run({x}, ro);
  ASSERT_EQ(again.size(), first.size());
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(again[i].same_as(first[i])) << "output " << i;
  EXPECT_EQ(c.graph->placement()->gpu_nodes, 1);
  EXPECT_EQ(c.graph->placement()->cpu_reasons, learned_run.cpu_reasons);
  EXPECT_EQ(part.learned_signatures(), 1u);
  EXPECT_EQ(part.learned(partition::signature_of({x})).get(), verdicts.get());

  // Another signature is learned on its own.
  c.graph->run({grid(32, 48)}, ro);
  EXPECT_EQ(part.learned_signatures(), 2u);
}

// Small shape arithmetic is learned to stay on the host; a graph learned to
// run wholly on the CPU goes straight to the CPU executor after that.
TEST(VulkanPartition, SmallHostWorkIsLearnedPerSignature) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  Compiled c = compile(chain_model(4));
  backends::RunOptions ro;
  c.graph->run({ramp(4)}, ro);
  auto small = c.graph->partition().learned(partition::signature_of({ramp(4)}));
  ASSERT_TRUE(small);
  EXPECT_TRUE(small->all_cpu());
  for (const std::string& why : small->why) EXPECT_EQ(why, vulkan::kSmallHostWork);

  Compiled big = compile(chain_model(10000));
  big.graph->run({ramp(10000)}, ro);
  auto large = big.graph->partition().learned(partition::signature_of({ramp(10000)}));
  ASSERT_TRUE(large);
  for (Learned l : large->node) EXPECT_EQ(l, Learned::Gpu);
}

// The learned verdicts are bounded: a stream of new shapes keeps the most
// recent signatures only.
TEST(VulkanPartition, LearnedSignaturesAreBounded) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  Compiled c = compile(pool_with_indices(8, 8));
  backends::RunOptions ro;
  const size_t kept = partition::SignatureCache<vulkan::Partition::Verdicts>::kept;
  for (size_t i = 0; i < kept + 3; ++i) c.graph->run({grid(8, 8 + 2 * int64_t(i))}, ro);
  EXPECT_EQ(c.graph->partition().learned_signatures(), kept);
  EXPECT_FALSE(c.graph->partition().learned(partition::signature_of({grid(8, 8)}))) << "the oldest signature went";
  EXPECT_TRUE(c.graph->partition().learned(partition::signature_of({grid(8, 8 + 2 * int64_t(kept + 2))})));
}

// A node that stayed on the CPU for a reason of the moment (here the device
// memory budget was full) keeps the run from teaching: the next run at that
// signature is asked again, and the nodes that fit then go to the GPU.
TEST(VulkanPartition, ARunWithAPassingRefusalTeachesNothing) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  backends::VulkanOptions vo;
  vo.device_memory_bytes = 16 << 10;  // 16 KiB: not one 40 KB tensor of the chain fits
  Compiled c = compile(chain_model(10000), vo);
  backends::RunOptions ro;
  for (int run = 0; run < 2; ++run) {
    c.graph->run({ramp(10000)}, ro);
    auto p = c.graph->placement();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->gpu_nodes, 0) << "run " << run;
    bool budget = false;
    for (const auto& [why, n] : p->cpu_reasons) budget |= why.find("budget") != std::string::npos;
    EXPECT_TRUE(budget) << "run " << run << ": " << p->summary();
    EXPECT_FALSE(c.graph->partition().learned(partition::signature_of({ramp(10000)}))) << "run " << run;
  }
}

// `kestrel inspect --backend vulkan` reports the static partition without a
// run; --run adds one and reports where the nodes ran, with the FLOPs.
TEST(VulkanPartition, InspectReportsThePartitionWithoutRunning) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const ModelFile file(chain_model(10000, /*with_topk=*/true), "partition");
  auto inspect = [&](const std::string& flags) {
    const auto [status, out] = run_kestrel("inspect " + file.path + " --json --backend vulkan " + flags);
    EXPECT_EQ(status, 0) << out;
    return nlohmann::json::parse(out)["placement"];
  };
  const nlohmann::json planned = inspect(""), ran = inspect("--run");
  EXPECT_EQ(planned["ran"], false);
  EXPECT_EQ(planned["gpu_nodes"], 5);
  EXPECT_EQ(planned["cpu_reasons"]["no Vulkan kernel for TopK"], 1);
  EXPECT_EQ(planned["dispatches"], 0) << "nothing was recorded";
  EXPECT_EQ(ran["ran"], true);
  EXPECT_EQ(ran["gpu_nodes"], 5);
  EXPECT_GT(ran["dispatches"].get<int>(), 0);
  EXPECT_GT(ran["gpu_flops_share"].get<double>(), 0.5);
}

// `kestrel bench --json --profile` times each node on its own (the device
// waited for after it): one entry per node in the order they ran, and per
// op type the same time again.
TEST(VulkanPartition, BenchProfileTimesEveryNodeInRunOrder) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const ModelFile file(chain_model(10000), "profile");
  const auto [status, out] = run_kestrel("bench " + file.path + " --backend vulkan --runs 2 --json --profile");
  ASSERT_EQ(status, 0) << out;
  const nlohmann::json report = nlohmann::json::parse(out);
  // The run times' statistics, ordered as they must be, and the load time.
  for (const char* k : {"load_ms", "min_ms", "median_ms", "mean_ms", "p90_ms", "p99_ms", "max_ms", "runs_per_s"})
    EXPECT_GT(report[k].get<double>(), 0.0) << k << ": " << out;
  EXPECT_LE(report["min_ms"].get<double>(), report["median_ms"].get<double>());
  EXPECT_LE(report["median_ms"].get<double>(), report["p90_ms"].get<double>());
  EXPECT_LE(report["p90_ms"].get<double>(), report["p99_ms"].get<double>());
  EXPECT_LE(report["p99_ms"].get<double>(), report["max_ms"].get<double>());
  EXPECT_NEAR(report["runs_per_s"].get<double>(), 1000.0 / report["mean_ms"].get<double>(), 1e-6 * 1000.0);
  const nlohmann::json profile = report["profile"];
  std::vector<std::string> order;
  double nodes_ms = 0, ops_ms = 0;
  for (const auto& n : profile["nodes"]) {
    order.push_back(n["node"].get<std::string>());
    EXPECT_GE(n["ms"].get<double>(), 0.0);
    nodes_ms += n["ms"].get<double>();
  }
  EXPECT_THAT(order, testing::ElementsAre("Relu_r", "Add_a", "Sigmoid_s", "Neg_ng", "Mul_y"));
  for (const auto& [op, ms] : profile["ops"].items()) ops_ms += ms.get<double>();
  EXPECT_EQ(profile["ops"].size(), 5u);
  EXPECT_NEAR(ops_ms, nodes_ms, 1e-6 * std::max(1.0, nodes_ms));
}

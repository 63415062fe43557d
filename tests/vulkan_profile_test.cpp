// Device time by kernel (Recorder::set_profiling, PlacementReport::kernels):
// a run that times its nodes (bench --profile) reports each dispatch's
// device time under its shader's name; other runs carry no timestamps.
#include <gtest/gtest.h>

#include "onnx_builders.h"
#include "runtime/session.h"
#include "vulkan_tests_switch.h"

using namespace kestrel;
using namespace kestrel::test;

namespace {

void count_node(void* self, const backends::NodeTiming&) { ++*static_cast<int*>(self); }

TEST(VulkanProfile, TimedRunsReportDeviceTimeByKernel) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {256, 64});
  add_float_initializer(g, "w", {64, 64}, 0.01f);
  add_node(g, "MatMul", {"x", "w"}, {"h"}, "matmul");
  set_int(add_node(g, "Softmax", {"h"}, {"r"}, "softmax"), "axis", -1);
  add_node(g, "MatMul", {"r", "w"}, {"y"}, "matmul2");
  add_output(g, "y");
  const std::string bytes = bytes_of(m);
  SessionOptions o;
  o.backend = BackendChoice::Vulkan;
  o.precision = Precision::Fp32;
  auto s = Session::load_bytes(bytes.data(), bytes.size(), o);
  Tensor x = Tensor::from_f32({256, 64}, std::vector<float>(256 * 64, 0.5f));
  s->run({{"x", x}});
  EXPECT_TRUE(s->placement()->kernels.empty()) << "a run that does not time its nodes writes no timestamps";
  int nodes = 0;
  s->run_traced({{"x", x}}, &count_node, &nodes);
  EXPECT_EQ(nodes, 3);
  const auto report = *s->placement();
  ASSERT_EQ(report.gpu_nodes, 3) << report.summary();
  int dispatches = 0;
  for (auto& [shader, e] : report.kernels) {
    EXPECT_GE(e.first, 0.0) << shader;
    EXPECT_GT(e.second, 0) << shader;
    dispatches += e.second;
  }
  EXPECT_EQ(size_t(dispatches), report.dispatches) << "every dispatch is charged to its kernel once";
  EXPECT_EQ(report.kernels.count("gemm"), 1u) << "the MatMuls run the GEMM shader";
  EXPECT_EQ(report.kernels.count("softmax"), 1u) << report.summary();
  double total = 0;
  for (auto& [shader, e] : report.kernels) total += e.first;
  EXPECT_GT(total, 0.0) << "two GEMMs of 256x64x64 take measurable device time";
}

}  // namespace

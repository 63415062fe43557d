// Replay (backends/vulkan/replay.h): a run at a known input signature whose
// recorded work depends on shapes alone submits the command buffers an
// earlier run recorded. A replayed run must give the bits a run that records
// gives, input after input; work that depends on an input's values must be
// recorded every run, and the placement report must say why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "onnx_builders.h"
#include "runtime/session.h"
#include "scoped_env.h"
#include "vulkan_tests_switch.h"

using namespace kestrel;
using namespace kestrel::test;

namespace {

// x[rows, 64] @ W[64, 48] + shift[1] -> Reshape to its own shape (the shape
// computed on the host by Shape, then read by the GPU kernel as a host input)
// -> Relu -> Softmax. Two graph inputs, one of them small; a host-computed
// value that depends on the shape alone.
std::string shape_only_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {"rows", 64});
  add_input(g, "shift", {1});
  auto* w = add_float_initializer(g, "w", {64, 48});
  for (int i = 0; i < 64 * 48; ++i) w->set_float_data(i, float((i * 29) % 97) / 97.0f - 0.5f);
  add_node(g, "MatMul", {"x", "w"}, {"m"}, "matmul");
  add_node(g, "Add", {"m", "shift"}, {"a"}, "add_shift");
  add_node(g, "Shape", {"a"}, {"sa"}, "shape");
  add_node(g, "Reshape", {"a", "sa"}, {"r"}, "reshape_to_own_shape");
  add_node(g, "Relu", {"r"}, {"h"}, "relu");
  set_int(add_node(g, "Softmax", {"h"}, {"y"}, "softmax"), "axis", -1);
  add_output(g, "y");
  return bytes_of(m);
}

Tensor pattern(const Shape& shape, int seed) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float((i * 37 + seed * 11) % 101) / 50.0f - 1.0f;
  return t;
}

Tensor scalar_shift(float v) { return Tensor::from_f32({1}, {v}); }

std::unique_ptr<Session> session(const std::string& bytes, Precision p, bool replay) {
  SessionOptions o;
  o.backend = BackendChoice::Vulkan;
  o.precision = p;
  o.threads = 2;
  if (replay) return Session::load_bytes(bytes.data(), bytes.size(), o);
  ScopedEnv off("KESTREL_VK_REPLAY", "off");
  return Session::load_bytes(bytes.data(), bytes.size(), o);
}

void expect_same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].same_as(b[i])) << what << ", output " << i;
}

void expect_replays_across_signatures(Precision precision) {
  const std::string bytes = shape_only_model();
  auto replaying = session(bytes, precision, true);
  auto recording = session(bytes, precision, false);
  int replayed = 0, run = 0;
  // 200 rows, then 300 (its own signature: recorded again), then 200 again.
  for (int64_t rows : {200, 300, 200}) {
    for (int k = 0; k < 5; ++k, ++run) {
      std::map<std::string, Tensor> in{{"x", pattern({rows, 64}, run)}, {"shift", scalar_shift(0.25f * float(k))}};
      const std::string what = "rows " + std::to_string(rows) + ", run " + std::to_string(k);
      auto want = recording->run(in);
      EXPECT_FALSE(recording->placement()->replayed) << what << ": KESTREL_VK_REPLAY=off records every run";
      auto got = replaying->run(in);
      expect_same_bits(got, want, what);
      const auto report = *replaying->placement();
      EXPECT_EQ(report.not_replayable, "") << what;
      EXPECT_EQ(report.cpu_nodes, 1) << what << ": only Shape on the CPU\n" << report.summary();
      // The first run at a signature records its verdicts and arena, the
      // second is kept (the first again after calibration in float16, whose
      // first run decides the plan); the rest replay it.
      const int first_replay = precision == Precision::Fp16 && run < 5 ? 3 : 2;
      if (k >= first_replay) {
        EXPECT_TRUE(report.replayed) << what << "\n" << report.summary();
        EXPECT_EQ(report.record_ms, 0) << what;
        EXPECT_GT(report.dispatches, 0u) << what << ": the kept run's counts";
      }
      if (k == 0) EXPECT_FALSE(report.replayed) << what << ": a new signature records";
      replayed += report.replayed;
    }
  }
  EXPECT_GE(replayed, 8);
}

TEST(VulkanReplay, ReplayedRunsGiveTheBitsOfRunsThatRecord) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  expect_replays_across_signatures(Precision::Fp32);
}

TEST(VulkanReplay, Float16SessionsReplayTheirCalibratedPlan) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  expect_replays_across_signatures(Precision::Fp16);
}

TEST(VulkanReplay, ThreadsReplayTheirOwnRunsWithTheirOwnInputs) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const std::string bytes = shape_only_model();
  auto replaying = session(bytes, Precision::Fp32, true);
  auto recording = session(bytes, Precision::Fp32, false);
  constexpr int kThreads = 4, kRuns = 6;
  std::vector<std::vector<Tensor>> want(kThreads * kRuns), got(kThreads * kRuns);
  auto input = [](int i) {
    return std::map<std::string, Tensor>{{"x", pattern({256, 64}, i)}, {"shift", scalar_shift(0.1f * float(i))}};
  };
  for (int i = 0; i < kThreads * kRuns; ++i) want[size_t(i)] = recording->run(input(i));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) got[size_t(t * kRuns + r)] = replaying->run(input(t * kRuns + r));
    });
  for (auto& th : threads) th.join();
  for (int i = 0; i < kThreads * kRuns; ++i) expect_same_bits(got[size_t(i)], want[size_t(i)], "input " + std::to_string(i));
}

// Gather's indices are a graph input (a text model's token ids): the kernel
// reads them on the device and checks them on the host
// (OpContext::check_values), so runs replay with each run's ids, and an
// out-of-range id is still an error naming the node, on a replay too, after
// which the kept run replays on.
TEST(VulkanReplay, CheckedIndicesReplayAndAnOutOfRangeOneIsStillAnError) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "ids", {4, 1200}, onnx::TensorProto::INT64);
  auto* table = add_float_initializer(g, "table", {50, 16});
  for (int i = 0; i < 50 * 16; ++i) table->set_float_data(i, float((i * 13) % 41) / 41.0f - 0.5f);
  add_node(g, "Gather", {"table", "ids"}, {"e"}, "embed");
  add_node(g, "Relu", {"e"}, {"y"}, "relu");
  add_output(g, "y");
  const std::string bytes = bytes_of(m);
  auto s = session(bytes, Precision::Fp32, true);
  SessionOptions co;
  co.backend = BackendChoice::Cpu;
  auto cpu = Session::load_bytes(bytes.data(), bytes.size(), co);
  auto ids = [](int seed, int64_t bad) {
    Tensor t(DType::Int64, {4, 1200});
    for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = (i * 7 + seed * 3) % 100 - 50;  // -50..49
    if (bad != 0) t.data<int64_t>()[777] = bad;
    return t;
  };
  auto expect_refused = [&](int64_t bad, int run) {
    try {
      s->run({{"ids", ids(run, bad)}});
      ADD_FAILURE() << "id " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("embed"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("index " + std::to_string(bad) + " is out of range for axis 0 of size 50"));
    }
  };
  expect_refused(50, 0);  // a recording run
  int replayed = 0;
  for (int k = 0; k < 6; ++k) {
    std::map<std::string, Tensor> in{{"ids", ids(k, 0)}};
    expect_same_bits(s->run(in), cpu->run(in), "run " + std::to_string(k));
    const auto report = *s->placement();
    EXPECT_EQ(report.not_replayable, "") << "run " << k << "\n" << report.summary();
    EXPECT_EQ(report.cpu_nodes, 0) << "run " << k << "\n" << report.summary();
    replayed += report.replayed;
    if (k == 3) {
      ASSERT_TRUE(report.replayed) << report.summary();
      expect_refused(-51, k);  // a replay
    }
  }
  EXPECT_GE(replayed, 3);
}

// Reshape's target shape is a graph input: the same signature (an int64[2]
// and a float[1, 6000]) gives outputs of different shapes.
TEST(VulkanReplay, WorkThatReadsAnInputsValuesIsRecordedEveryRun) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 6000});
  add_input(g, "to", {2}, onnx::TensorProto::INT64);
  add_node(g, "Relu", {"x"}, {"r"}, "relu");
  add_node(g, "Reshape", {"r", "to"}, {"y"}, "reshape");
  add_output(g, "y");
  const std::string bytes = bytes_of(m);
  auto s = session(bytes, Precision::Fp32, true);
  const std::vector<std::vector<int64_t>> targets{{1, 6000}, {6000, 1}, {1, 6000}, {3, 2000}, {2000, 3}, {6000, 1}};
  for (size_t k = 0; k < targets.size(); ++k) {
    Tensor to(DType::Int64, {2});
    to.data<int64_t>()[0] = targets[k][0];
    to.data<int64_t>()[1] = targets[k][1];
    auto out = s->run({{"x", pattern({1, 6000}, int(k))}, {"to", to}});
    ASSERT_EQ(out[0].shape(), (Shape{targets[k][0], targets[k][1]})) << "run " << k;
    const auto report = *s->placement();
    EXPECT_FALSE(report.replayed) << "run " << k;
    if (k >= 1) EXPECT_NE(report.not_replayable.find("took a graph input as a host input"), std::string::npos)
        << "run " << k << "\n" << report.summary();
  }

  // TopK has no Vulkan kernel: the host reads its input back mid-run, and the
  // values after it are uploaded from this run's data.
  auto t = make_model(17);
  g = t.mutable_graph();
  add_input(g, "x", {1, 6000});
  add_int64_initializer(g, "k", {5000});
  add_node(g, "Relu", {"x"}, {"r"}, "relu");
  add_node(g, "TopK", {"r", "k"}, {"top", "top_i"}, "topk");
  add_node(g, "Neg", {"top"}, {"y"}, "neg");
  add_output(g, "y");
  const std::string topk = bytes_of(t);
  auto a = session(topk, Precision::Fp32, true);
  auto cpu_opts = SessionOptions{};
  cpu_opts.backend = BackendChoice::Cpu;
  auto cpu = Session::load_bytes(topk.data(), topk.size(), cpu_opts);
  for (int k = 0; k < 4; ++k) {
    std::map<std::string, Tensor> in{{"x", pattern({1, 6000}, k)}};
    expect_same_bits(a->run(in), cpu->run(in), "TopK run " + std::to_string(k));
    const auto report = *a->placement();
    EXPECT_FALSE(report.replayed) << "TopK run " << k;
    if (k >= 1) EXPECT_NE(report.not_replayable.find("read device values back"), std::string::npos)
        << "TopK run " << k << "\n" << report.summary();
  }
}

}  // namespace

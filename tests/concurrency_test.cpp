// Sharing and lifetime: one session run by eight threads at once gives each
// thread exactly the answer it gets alone, on the CPU and on Vulkan, and a
// thousand sessions loaded, run and freed one after another leave host and
// device memory where the first fifty put them. The Vulkan cases fail without
// a Vulkan device (lavapipe in CI); KESTREL_VULKAN_TESTS=off skips them.
//
// The sessions use one OpenMP thread each: the sharing under test is the
// session's own (plans, pools, command buffers, descriptor sets), eight caller
// threads already oversubscribe a two-core machine, and it keeps OpenMP's
// runtime (not built for ThreadSanitizer) out of scripts/sanitize.sh's TSan run.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "onnx_builders.h"
#include "runtime/session.h"
#include "vulkan_tests_switch.h"

using kestrel::test::vulkan_tests_off;

using namespace kestrel;

namespace {

// A small convolutional head with a few different kernels, all of which both
// backends run: x[1,8,32,32] -> Conv 3x3 (4 channels, stride 2, pad 1) ->
// Relu -> Reshape [1,64,16] -> MatMul [16,32] -> Add bias -> Sigmoid ->
// y[1,64,32]. The input is large enough (8,192 values) that Vulkan runs every
// node on the device rather than keeping small host tensors on the host, and
// small enough that a run takes about a millisecond on lavapipe.
std::string conv_matmul_model() {
  using namespace test;
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 8, 32, 32});
  // Varied weights, so a kernel reading the wrong element changes the answer.
  auto varied = [&](const char* name, std::vector<int64_t> dims, int period, float step, float offset) {
    auto* t = add_float_initializer(g, name, dims);
    for (int i = 0; i < t->float_data_size(); ++i) t->set_float_data(i, float(i % period) * step + offset);
  };
  varied("w", {4, 8, 3, 3}, 11, 0.05f, -0.25f);
  varied("b", {4}, 4, 0.1f, -0.3f);
  varied("m", {16, 32}, 13, 0.01f, -0.06f);
  varied("bias", {32}, 5, 0.2f, -0.4f);
  add_int64_initializer(g, "shape", {1, 64, 16});
  auto* conv = add_node(g, "Conv", {"x", "w", "b"}, {"c"}, "conv");
  set_ints(conv, "pads", {1, 1, 1, 1});
  set_ints(conv, "strides", {2, 2});
  add_node(g, "Relu", {"c"}, {"r"}, "relu");
  add_node(g, "Reshape", {"r", "shape"}, {"f"}, "reshape");
  add_node(g, "MatMul", {"f", "m"}, {"mm"}, "matmul");
  add_node(g, "Add", {"mm", "bias"}, {"a"}, "add");
  add_node(g, "Sigmoid", {"a"}, {"y"}, "sigmoid");
  add_output(g, "y");
  return bytes_of(m);
}

std::unique_ptr<Session> load(const std::string& bytes, const std::string& backend) {
  SessionOptions o;
  o.backend = parse_backend(backend);
  o.precision = Precision::Fp32;
  o.threads = 1;
  return Session::load_bytes(bytes.data(), bytes.size(), o);
}

// Thread t's input: distinct per thread, so an output handed to the wrong
// caller (or computed from another caller's input) differs from the reference.
Tensor input_for(int t) {
  Tensor x(DType::Float32, {1, 8, 32, 32});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float((i * 7 + t * 31) % 97) / 24.0f - 2.0f + 0.1f * t;
  return x;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Eight threads, a thousand runs each, on one session; every output must be
// bit-identical to that thread's input run alone before the threads start.
void eight_threads_share_one_session(const std::string& backend) {
  constexpr int kThreads = 8, kRuns = 1000;
  std::string bytes = conv_matmul_model();
  auto s = load(bytes, backend);
  std::vector<Tensor> inputs, want;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(input_for(t));
    auto out = s->run({{"x", inputs.back()}});
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].shape(), (Shape{1, 64, 32}));
    want.push_back(out[0]);
  }
  // The inputs must actually lead to different answers, or a mix-up between
  // threads could not be seen.
  for (int t = 1; t < kThreads; ++t) ASSERT_FALSE(same_bits(want[0], want[t])) << "thread " << t;

  std::atomic<int> wrong{0}, errors{0};
  std::vector<std::string> first_error(kThreads);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        try {
          auto out = s->run({{"x", inputs[t]}});
          if (out.size() != 1 || !same_bits(out[0], want[t])) ++wrong;
        } catch (const std::exception& e) {
          if (errors++ == 0) first_error[t] = e.what();
        }
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(wrong.load(), 0) << "of " << kThreads * kRuns << " runs on " << backend;
  EXPECT_EQ(errors.load(), 0);
  for (auto& e : first_error) EXPECT_EQ(e, "");
  if (backend == "vulkan") {  // the device did the work, not the CPU fallback
    auto p = s->placement();
    ASSERT_TRUE(p);
    EXPECT_GT(p->gpu_nodes, 0);
    EXPECT_EQ(p->cpu_nodes, 0) << s->placement_summary();
  }
}

size_t resident_kb() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, rss = 0;
  f >> pages >> rss;
  return rss * size_t(sysconf(_SC_PAGESIZE)) / 1024;
}

struct MemoryAfter {
  size_t rss_kb = 0, device_bytes = 0;
};

// Loads, runs and frees `count` sessions one after another; returns memory
// after the first `warmup` and after the last. On Vulkan one more session
// stays open throughout, as in a program that keeps a model loaded: the
// device stays open (it closes with the last session) and the sessions come
// and go on it, each with its own memory blocks, pipelines and descriptors.
std::pair<MemoryAfter, MemoryAfter> load_run_free(const std::string& backend, int count, int warmup) {
  std::string bytes = conv_matmul_model();
  Tensor x = input_for(0);
  auto keeps_device_open = load(bytes, backend);
  MemoryAfter warm, end;
  for (int i = 0; i < count; ++i) {
    size_t device_bytes = 0;
    {
      auto s = load(bytes, backend);
      auto out = s->run({{"x", x}});
      if (out.size() != 1) ADD_FAILURE() << "session " << i << " gave " << out.size() << " outputs";
      if (auto p = s->placement()) {
        device_bytes = p->device_bytes;
        if (p->cpu_nodes != 0) ADD_FAILURE() << "session " << i << ": " << s->placement_summary();
      }
    }
    if (i + 1 == warmup) warm = {resident_kb(), device_bytes};
    if (i + 1 == count) end = {resident_kb(), device_bytes};
  }
  return {warm, end};
}

// Every session holds its graph, compiled plan and weights, and on Vulkan
// its memory blocks (tens of MiB on lavapipe, where device memory is host
// memory); one never freed would add 950 of them. 2 MiB of slack covers the
// allocator's own bookkeeping and arenas (which keep freed pages for reuse)
// while still catching anything over ~2 KiB a session.
constexpr size_t kSlackKb = 2048;

}  // namespace

TEST(Concurrency, EightThreadsThousandRunsEachBitIdenticalOnCpu) { eight_threads_share_one_session("cpu"); }

TEST(Concurrency, EightThreadsThousandRunsEachBitIdenticalOnVulkan) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  eight_threads_share_one_session("vulkan");
}

TEST(Lifetime, ThousandSessionsKeepHostMemoryFlatOnCpu) {
  auto [warm, end] = load_run_free("cpu", 1000, 50);
  std::printf("1,000 CPU sessions: host RSS %zu -> %zu KiB\n", warm.rss_kb, end.rss_kb);
  EXPECT_LT(end.rss_kb, warm.rss_kb + kSlackKb) << "host memory grew by " << (end.rss_kb - warm.rss_kb) << " KiB";
}

// lavapipe's device memory is host memory, so RSS sees device leaks too;
// device_bytes shows that each session holds what the first ones held.
TEST(Lifetime, ThousandSessionsKeepHostAndDeviceMemoryFlatOnVulkan) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto [warm, end] = load_run_free("vulkan", 1000, 50);
  std::printf("1,000 Vulkan sessions: host RSS %zu -> %zu KiB, device memory %zu -> %zu bytes\n", warm.rss_kb,
              end.rss_kb, warm.device_bytes, end.device_bytes);
  EXPECT_GT(warm.device_bytes, 0u);
  EXPECT_EQ(end.device_bytes, warm.device_bytes);
  EXPECT_LT(end.rss_kb, warm.rss_kb + kSlackKb) << "host memory grew by " << (end.rss_kb - warm.rss_kb) << " KiB";
}

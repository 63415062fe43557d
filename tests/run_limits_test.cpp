// Runs that end: a Loop or Scan node may run at most
// SessionOptions::max_loop_iterations iterations, a run can be cancelled from
// another thread or given a timeout (C++ and C API, CPU and Vulkan backends),
// and thread counts out of range are refused at every edge.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "api/kestrel.h"
#include "cli_helpers.h"
#include "onnx_builders.h"
#include "runtime/session.h"
#include "vulkan_tests_switch.h"

using namespace kestrel;
using namespace kestrel::test;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

constexpr int kInt64 = onnx::TensorProto::INT64;
constexpr int kBool = onnx::TensorProto::BOOL;
using Clock = std::chrono::steady_clock;

// x[1] -> Loop 'forever' -> y[1]: the body passes x and its condition through
// unchanged, so the loop ends only after trip_count iterations (none when
// trip_count < 0: it then never ends, as its condition stays true).
onnx::ModelProto loop_model(int64_t trip_count) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  set_type(g->add_input(), "x", {1}, kFloat);
  auto* cond = g->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(kBool);
  cond->add_int32_data(1);
  std::string m_name;
  if (trip_count >= 0) {
    auto* mt = g->add_initializer();
    mt->set_name("M");
    mt->set_data_type(kInt64);
    mt->add_int64_data(trip_count);
    m_name = "M";
  }
  auto* loop = add_node(g, "Loop", {m_name, "cond", "x"}, {"y"}, "forever");
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  auto* body = a->mutable_g();
  body->set_name("body");
  set_type(body->add_input(), "i", {}, kInt64);
  set_type(body->add_input(), "c_in", {}, kBool);
  set_type(body->add_input(), "v_in", {1}, kFloat);
  add_node(body, "Identity", {"c_in"}, {"c_out"}, "keep_going");
  add_node(body, "Identity", {"v_in"}, {"v_out"}, "carry");
  set_type(body->add_output(), "c_out", {}, kBool);
  set_type(body->add_output(), "v_out", {1}, kFloat);
  set_type(g->add_output(), "y", {1}, kFloat);
  return m;
}

// xs[steps, 0] -> Scan 'scan' -> ys[steps, 0]: as many steps as xs has rows,
// though it holds no data at all.
onnx::ModelProto scan_model(int64_t steps) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  set_type(g->add_input(), "xs", {steps, 0}, kFloat);
  auto* scan = add_node(g, "Scan", {"xs"}, {"ys"}, "scan");
  auto* n = scan->add_attribute();
  n->set_name("num_scan_inputs");
  n->set_type(onnx::AttributeProto::INT);
  n->set_i(1);
  auto* a = scan->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  auto* body = a->mutable_g();
  body->set_name("body");
  set_type(body->add_input(), "x", {0}, kFloat);
  add_node(body, "Identity", {"x"}, {"y"}, "step");
  set_type(body->add_output(), "y", {0}, kFloat);
  set_type(g->add_output(), "ys", {steps, 0}, kFloat);
  return m;
}

std::unique_ptr<Session> load(const onnx::ModelProto& m, SessionOptions o = {}) {
  if (o.backend == BackendChoice::Auto) o.backend = BackendChoice::Cpu;
  std::string b = bytes_of(m);
  return Session::load_bytes(b.data(), b.size(), o);
}

SessionOptions with_cap(int64_t cap, const std::string& backend = "cpu") {
  SessionOptions o;
  o.backend = parse_backend(backend);
  o.threads = 1;
  o.max_loop_iterations = cap;
  return o;
}

Tensor one_float() {
  Tensor t(DType::Float32, {1});
  t.data<float>()[0] = 7.0f;
  return t;
}

// The message of the Error `run` throws; fails the test if it throws none.
template <typename F>
std::string error_of(F&& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the run succeeded, but an Error was expected";
  return "";
}

}  // namespace

// ---- The iteration cap ----

TEST(LoopCap, TripCountOf2To62IsStoppedAtTheCap) {
  auto s = load(loop_model(int64_t(1) << 62), with_cap(1000));
  std::string e = error_of([&] { s->run({{"x", one_float()}}); });
  EXPECT_THAT(e, HasSubstr("node 'forever' (Loop)"));
  EXPECT_THAT(e, HasSubstr("more than 1000 iterations"));
  EXPECT_THAT(e, HasSubstr("max_loop_iterations"));
}

TEST(LoopCap, ConditionThatStaysTrueIsStoppedAtTheDefaultCap) {
  // No trip count and a condition that never turns false: before the cap
  // this ran until killed. The default cap ends it within seconds.
  SessionOptions o;
  o.backend = BackendChoice::Cpu;
  o.threads = 1;
  ASSERT_EQ(o.max_loop_iterations, 1'000'000);
  auto s = load(loop_model(-1), o);
  auto t0 = Clock::now();
  std::string e = error_of([&] { s->run({{"x", one_float()}}); });
  EXPECT_THAT(e, HasSubstr("node 'forever' (Loop): would run more than 1000000 iterations"));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(60));
}

TEST(LoopCap, ExactlyTheCapStillRuns) {
  auto s = load(loop_model(1000), with_cap(1000));
  auto out = s->run({{"x", one_float()}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data<float>()[0], 7.0f);
  auto over = load(loop_model(1001), with_cap(1000));
  EXPECT_THAT(error_of([&] { over->run({{"x", one_float()}}); }), HasSubstr("more than 1000 iterations"));
}

TEST(LoopCap, ZeroLiftsTheCap) {
  auto s = load(loop_model(3000), with_cap(0));
  EXPECT_EQ(s->run({{"x", one_float()}})[0].data<float>()[0], 7.0f);
}

TEST(LoopCap, NegativeCapIsRefusedAtLoad) {
  std::string b = bytes_of(loop_model(3));
  EXPECT_THAT(error_of([&] { Session::load_bytes(b.data(), b.size(), with_cap(-5)); }),
              HasSubstr("max_loop_iterations must be 0 (no cap) or more, got -5"));
}

TEST(LoopCap, ScanWithMoreStepsThanTheCapIsRefusedBeforeItRuns) {
  // xs [5000, 0] holds no data but asks for 5000 steps (2^40 would as well).
  auto s = load(scan_model(5000), with_cap(1000));
  std::string e = error_of([&] { s->run({{"xs", Tensor(DType::Float32, {5000, 0})}}); });
  EXPECT_THAT(e, HasSubstr("node 'scan' (Scan): would run more than 1000 iterations"));
  auto fits = load(scan_model(1000), with_cap(1000));
  EXPECT_EQ(fits->run({{"xs", Tensor(DType::Float32, {1000, 0})}})[0].shape(), (Shape{1000, 0}));
}

TEST(LoopCap, VulkanBackendStopsTheLoopToo) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto s = load(loop_model(-1), with_cap(500, "vulkan"));
  EXPECT_THAT(error_of([&] { s->run({{"x", one_float()}}); }),
              HasSubstr("node 'forever' (Loop): would run more than 500 iterations"));
}

// ---- Cancellation and timeouts ----

namespace {

// Runs `s` on a never-ending loop in another thread, sets `cancel` after
// `delay`, and returns the error and how long the run took after the flag
// was set. The cap (a billion) keeps the test finite if cancelling failed.
std::pair<std::string, Clock::duration> cancel_after(const Session& s, std::chrono::milliseconds delay) {
  std::atomic<bool> cancel{false};
  auto run = std::async(std::launch::async, [&] {
    RunControl rc;
    rc.cancel = &cancel;
    return error_of([&] { s.run({{"x", one_float()}}, rc); });
  });
  std::this_thread::sleep_for(delay);
  EXPECT_EQ(run.wait_for(std::chrono::seconds(0)), std::future_status::timeout) << "the loop ended by itself";
  auto set_at = Clock::now();
  cancel = true;
  std::string e = run.get();
  return {e, Clock::now() - set_at};
}

}  // namespace

TEST(RunCancel, NeverEndingLoopIsCancelledFromAnotherThread) {
  auto s = load(loop_model(-1), with_cap(1'000'000'000));
  auto [e, took] = cancel_after(*s, std::chrono::milliseconds(200));
  EXPECT_THAT(e, HasSubstr("run cancelled"));
  // It stops at an iteration of the Loop or before a node of its body.
  EXPECT_TRUE(e.find("of node 'forever' (Loop)") != std::string::npos ||
              e.find("before node 'keep_going' (Identity)") != std::string::npos ||
              e.find("before node 'carry' (Identity)") != std::string::npos)
      << e;
  EXPECT_LT(took, std::chrono::seconds(2));
}

TEST(RunCancel, CancelledRunThrowsRunCancelled) {
  auto s = load(loop_model(-1), with_cap(0));
  std::atomic<bool> cancel{true};  // already set: the run stops before its first node
  RunControl rc;
  rc.cancel = &cancel;
  try {
    s->run({{"x", one_float()}}, rc);
    ADD_FAILURE() << "a cancelled run returned";
  } catch (const RunCancelled& e) {
    EXPECT_STREQ(e.what(), "run cancelled before node 'forever' (Loop)");
  }
  // The session is unharmed: a run without the flag completes.
  auto ok = load(loop_model(3), with_cap(0));
  EXPECT_EQ(ok->run({{"x", one_float()}}, RunControl{})[0].data<float>()[0], 7.0f);
}

TEST(RunCancel, TimeoutEndsANeverEndingLoop) {
  auto s = load(loop_model(-1), with_cap(1'000'000'000));
  auto t0 = Clock::now();
  std::string e = error_of([&] { s->run({{"x", one_float()}}, {.timeout_ms = 150}); });
  auto took = Clock::now() - t0;
  EXPECT_THAT(e, HasSubstr("run cancelled: its 150 ms timeout passed"));
  EXPECT_GE(took, std::chrono::milliseconds(150));
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST(RunCancel, BadTimeoutIsRefused) {
  auto s = load(loop_model(3), with_cap(0));
  RunControl rc;
  rc.timeout_ms = -1;
  EXPECT_THAT(error_of([&] { s->run({{"x", one_float()}}, rc); }), HasSubstr("timeout must be 0 (none) or more"));
}

TEST(RunCancel, VulkanGraphRunnerStopsBetweenNodes) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  // x -> Relu 'first' -> Neg 'second': cancelled before any node runs.
  auto m = make_model();
  auto* g = m.mutable_graph();
  set_type(g->add_input(), "x", {1, 4096}, kFloat);
  add_node(g, "Relu", {"x"}, {"r"}, "first");
  add_node(g, "Neg", {"r"}, {"y"}, "second");
  set_type(g->add_output(), "y", {1, 4096}, kFloat);
  auto s = load(m, with_cap(0, "vulkan"));
  ASSERT_NE(s->backend_name().find("vulkan"), std::string::npos) << s->backend_name();
  std::atomic<bool> cancel{true};
  RunControl rc;
  rc.cancel = &cancel;
  Tensor x(DType::Float32, {1, 4096});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(i % 7) - 3.0f;
  EXPECT_EQ(error_of([&] { s->run({{"x", x}}, rc); }), "run cancelled before node 'first' (Relu)");
  cancel = false;
  auto out = s->run({{"x", x}}, rc);  // and runs again once the flag is clear
  EXPECT_EQ(out[0].data<float>()[4], -1.0f);
}

TEST(RunCancel, VulkanBackendCancelsANeverEndingLoop) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto s = load(loop_model(-1), with_cap(1'000'000'000, "vulkan"));
  auto [e, took] = cancel_after(*s, std::chrono::milliseconds(200));
  EXPECT_THAT(e, HasSubstr("run cancelled"));
  EXPECT_LT(took, std::chrono::seconds(2));
}

TEST(RunCancel, CApiRunIsCancelledFromAnotherThread) {
  ModelFile file(loop_model(-1), "capi_cancel");
  kestrel_options opts = {"cpu", nullptr, 1};
  kestrel_limits limits = {sizeof(kestrel_limits), -1, 0, 0};  // no loop cap
  kestrel_session* s = kestrel_session_load_with_limits(file.path.c_str(), &opts, &limits);
  ASSERT_NE(s, nullptr) << kestrel_last_error();
  kestrel_cancel* cancel = kestrel_cancel_new();
  ASSERT_NE(cancel, nullptr);
  int64_t shape[] = {1};
  float x = 7.0f;
  kestrel_tensor in = {KESTREL_FLOAT32, 1, shape, &x};
  const char* names[] = {"x"};
  auto run = std::async(std::launch::async, [&] {
    kestrel_run_options ro = {cancel, 0};
    kestrel_outputs* out = kestrel_session_run_with(s, 1, names, &in, &ro);
    std::string err = kestrel_last_error();  // (kept per thread: read it on the thread that ran)
    return std::make_pair(out, err);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kestrel_cancel_request(cancel);
  ASSERT_EQ(run.wait_for(std::chrono::seconds(5)), std::future_status::ready) << "the cancelled run did not return";
  auto [out, err] = run.get();
  EXPECT_EQ(out, nullptr);
  EXPECT_THAT(err, HasSubstr("run cancelled"));
  kestrel_cancel_free(cancel);

  kestrel_run_options timed = {nullptr, 100};
  EXPECT_EQ(kestrel_session_run_with(s, 1, names, &in, &timed), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("run cancelled: its 100 ms timeout passed"));
  EXPECT_EQ(kestrel_last_error_code(), KESTREL_CANCELLED);
  kestrel_session_free(s);

  // The plain kestrel_session_load keeps the default cap.
  kestrel_session* capped = kestrel_session_load(file.path.c_str(), &opts);
  ASSERT_NE(capped, nullptr) << kestrel_last_error();
  EXPECT_EQ(kestrel_session_run(capped, 1, names, &in), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("would run more than 1000000 iterations"));
  kestrel_session_free(capped);
}

// ---- Thread counts ----

TEST(ThreadLimits, OutOfRangeThreadCountsAreRefusedAtLoad) {
  std::string b = bytes_of(loop_model(3));
  for (int threads : {-1, 100000, SessionOptions::kMaxThreads + 1}) {
    SessionOptions o = with_cap(0);
    o.threads = threads;
    EXPECT_THAT(error_of([&] { Session::load_bytes(b.data(), b.size(), o); }),
                HasSubstr("threads must be 0 (every hardware thread) to 1024, got " + std::to_string(threads)));
  }
  SessionOptions most = with_cap(0);
  most.threads = SessionOptions::kMaxThreads;
  EXPECT_EQ(Session::load_bytes(b.data(), b.size(), most)->threads(), 1024);
}

TEST(ThreadLimits, CApiRefusesThreadCountsOutOfRange) {
  ModelFile file(loop_model(3), "capi_threads");
  kestrel_options opts = {"cpu", nullptr, 100000};
  EXPECT_EQ(kestrel_session_load(file.path.c_str(), &opts), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("threads must be 0 (every hardware thread) to 1024, got 100000"));
}

TEST(ThreadLimits, CliRefusesThreadCountsOutOfRange) {
  ModelFile file(loop_model(3), "cli_threads");
  const auto [status, out] = run_kestrel("run " + file.path + " --backend cpu --threads 100000 2>&1");
  ASSERT_NE(status, -1) << "the shell did not start";
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal: " << out;  // libgomp used to abort here
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  EXPECT_THAT(out, HasSubstr("--threads must be 0 (all cores) to 1024, got 100000"));
}

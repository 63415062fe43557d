// The C API's sized session options, its status codes and its reading of
// inputs in place (src/api/kestrel.h).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "api/kestrel.h"
#include "onnx_builders.h"
#include "real_models.h"

namespace kestrel {
namespace {

std::string silero_path() { return real_models::models_dir() + "/silero_vad.onnx"; }

// y = Identity(x): its output is its input's bytes unless Kestrel copies them.
std::string identity_model() {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  test::add_input(g, "x", {4});
  test::add_node(g, "Identity", {"x"}, {"y"});
  test::add_output(g, "y");
  return test::bytes_of(m);
}

// kestrel_session_options: an older caller's shorter struct keeps the defaults
// of the fields it lacks; a struct_size too small for the first fields is refused.
TEST(CApiOptions, SessionOptionsAreReadUpToTheCallersStructSize) {
  kestrel_session_options o{};
  o.struct_size = sizeof o;
  o.backend = "cpu";
  o.threads = 1;
  kestrel_session* s = kestrel_session_create(silero_path().c_str(), &o);
  ASSERT_NE(s, nullptr) << kestrel_last_error();
  EXPECT_STREQ(kestrel_session_backend(s), "cpu");
  kestrel_session_free(s);

  o.device_memory_mb = -5;  // past an older caller's struct: never read
  o.struct_size = offsetof(kestrel_session_options, device_memory_mb);
  s = kestrel_session_create(silero_path().c_str(), &o);
  EXPECT_NE(s, nullptr) << kestrel_last_error();
  kestrel_session_free(s);

  o.struct_size = sizeof o;
  EXPECT_EQ(kestrel_session_create(silero_path().c_str(), &o), nullptr);
  EXPECT_NE(std::string(kestrel_last_error()).find("device_memory_mb"), std::string::npos) << kestrel_last_error();
  EXPECT_EQ(kestrel_last_error_code(), KESTREL_INVALID_ARGUMENT);

  o.device_memory_mb = 0;
  o.struct_size = 8;
  EXPECT_EQ(kestrel_session_create(silero_path().c_str(), &o), nullptr);
  EXPECT_NE(std::string(kestrel_last_error()).find("struct_size 8 is too small"), std::string::npos)
      << kestrel_last_error();

  o.struct_size = sizeof o;
  o.backend = "tpu";
  EXPECT_EQ(kestrel_session_create(silero_path().c_str(), &o), nullptr);
  EXPECT_NE(std::string(kestrel_last_error()).find("unknown backend 'tpu'"), std::string::npos)
      << kestrel_last_error();
  EXPECT_EQ(kestrel_last_error_code(), KESTREL_INVALID_ARGUMENT);
}

TEST(CApiOptions, AModelFromItsBytesRunsAsFromItsFile) {
  std::ifstream f(silero_path(), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty()) << silero_path() << " is missing: run scripts/fetch_models.sh";
  kestrel_session_options o{};
  o.struct_size = sizeof o;
  o.backend = "cpu";
  kestrel_session* s = kestrel_session_create_from_bytes(bytes.data(), bytes.size(), &o);
  ASSERT_NE(s, nullptr) << kestrel_last_error();
  EXPECT_EQ(kestrel_session_input_count(s), 3);
  EXPECT_STREQ(kestrel_session_output_name(s, 0), "output");
  kestrel_session_free(s);
}

// The tuning fields reach the session: with trace = 1 each executed node
// writes one line on stderr, and the CLIP fixture on the GPU runs as a few
// nodes around its fused encoder unless families = -1 (op by op: many more).
TEST(CApiOptions, TuningFieldsReachTheSession) {
  const std::string clip = std::string(KESTREL_SOURCE_DIR) + "/tests/models/clip/torchscript.onnx";
  std::vector<float> pixels(3 * 36 * 36, 0.5f);
  const int64_t shape[4] = {1, 3, 36, 36};
  const kestrel_tensor in{KESTREL_FLOAT32, 4, shape, pixels.data()};
  auto trace_lines = [&](int32_t families) {
    kestrel_session_options o{};
    o.struct_size = sizeof o;
    o.backend = "vulkan";
    o.trace = 1;
    o.families = families;
    o.gemm_tiles = "small";
    o.replay = -1;
    kestrel_session* s = kestrel_session_create(clip.c_str(), &o);
    EXPECT_NE(s, nullptr) << kestrel_last_error();
    if (!s) return size_t(0);
    const char* names[] = {kestrel_session_input_name(s, 0)};
    ::testing::internal::CaptureStderr();
    kestrel_outputs* out = kestrel_session_run(s, 1, names, &in);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(out, nullptr) << kestrel_last_error();
    kestrel_outputs_free(out);
    kestrel_session_free(s);
    size_t lines = 0;
    for (size_t at = err.find("[kestrel trace]"); at != std::string::npos; at = err.find("[kestrel trace]", at + 1)) ++lines;
    return lines;
  };
  const size_t fused = trace_lines(0), op_by_op = trace_lines(-1);
  EXPECT_GT(fused, 0u);
  EXPECT_GT(op_by_op, 3 * fused) << "fused " << fused << " lines, op by op " << op_by_op;
}

// A tuning field out of its range is refused by name, as an invalid argument.
TEST(CApiOptions, TuningFieldsOutOfRangeAreRefusedByName) {
  struct Case {
    void (*set)(kestrel_session_options&);
    const char* says;
  };
  const Case cases[] = {
      {[](kestrel_session_options& o) { o.trace = 3; }, "trace must be 0, 1 or 2, got 3"},
      {[](kestrel_session_options& o) { o.families = 1; }, "families must be 0 (default) or -1 (off), got 1"},
      {[](kestrel_session_options& o) { o.replay = 2; }, "replay must be 0 (default) or -1 (off), got 2"},
      {[](kestrel_session_options& o) { o.tensor_cores = 1; }, "tensor_cores must be 0 (default) or -1 (off), got 1"},
      {[](kestrel_session_options& o) { o.exact_buffers = 2; }, "exact_buffers must be 0 or 1, got 2"},
      {[](kestrel_session_options& o) { o.padding_free = -1; }, "padding_free must be 0 or 1, got -1"},
      {[](kestrel_session_options& o) { o.encoder_heads = -1; }, "encoder_heads must be 0 (not given) or more, got -1"},
      {[](kestrel_session_options& o) { o.attention_chunk = -4; }, "attention_chunk must be 0 (no cap) or more, got -4"},
      {[](kestrel_session_options& o) { o.gemm_tiles = "huge"; }, "unknown GEMM tiles 'huge'"},
      {[](kestrel_session_options& o) { o.cpu_kernels = "slow"; }, "unknown CPU kernels 'slow'"},
      {[](kestrel_session_options& o) { o.attention = "fast"; }, "unknown attention kernel 'fast'"},
  };
  for (const Case& c : cases) {
    kestrel_session_options o{};
    o.struct_size = sizeof o;
    o.backend = "cpu";
    c.set(o);
    EXPECT_EQ(kestrel_session_create(silero_path().c_str(), &o), nullptr) << c.says;
    EXPECT_NE(std::string(kestrel_last_error()).find(c.says), std::string::npos) << kestrel_last_error();
    EXPECT_EQ(kestrel_last_error_code(), KESTREL_INVALID_ARGUMENT) << c.says;
  }
}

// Each kind of failure has its code, and a call that succeeds clears it.
TEST(CApiStatus, EachFailureCarriesItsKind) {
  EXPECT_EQ(kestrel_session_create("/nonexistent/model.onnx", nullptr), nullptr);
  EXPECT_EQ(kestrel_last_error_code(), KESTREL_NO_SUCH_FILE) << kestrel_last_error();

  const char garbage[] = "this is not a protobuf \x01\x02\x03";
  EXPECT_EQ(kestrel_session_create_from_bytes(garbage, sizeof garbage, nullptr), nullptr);
  EXPECT_EQ(kestrel_last_error_code(), KESTREL_INVALID_MODEL) << kestrel_last_error();

  auto m = test::make_model();
  test::add_input(m.mutable_graph(), "x", {4});
  test::add_node(m.mutable_graph(), "NoSuchOpAnywhere", {"x"}, {"y"});
  test::add_output(m.mutable_graph(), "y");
  const std::string unsupported = test::bytes_of(m);
  EXPECT_EQ(kestrel_session_create_from_bytes(unsupported.data(), unsupported.size(), nullptr), nullptr);
  EXPECT_EQ(kestrel_last_error_code(), KESTREL_NOT_IMPLEMENTED) << kestrel_last_error();
  EXPECT_NE(std::string(kestrel_last_error()).find("NoSuchOpAnywhere"), std::string::npos) << kestrel_last_error();

  const std::string identity = identity_model();
  kestrel_session_options o{};
  o.struct_size = sizeof o;
  o.backend = "cpu";
  kestrel_session* s = kestrel_session_create_from_bytes(identity.data(), identity.size(), &o);
  ASSERT_NE(s, nullptr) << kestrel_last_error();
  EXPECT_EQ(kestrel_last_error_code(), KESTREL_OK);
  int64_t shape[] = {4};
  float x[4] = {1, 2, 3, 4};
  kestrel_tensor in = {KESTREL_FLOAT32, 1, shape, x};
  const char* wrong[] = {"z"};
  EXPECT_EQ(kestrel_session_run(s, 1, wrong, &in), nullptr);
  EXPECT_EQ(kestrel_last_error_code(), KESTREL_INVALID_ARGUMENT) << kestrel_last_error();
  kestrel_session_free(s);
}

// Inputs are read in place, yet an output that is an input's own bytes
// (Identity) is Kestrel's copy: changing or freeing the input afterwards
// leaves the output as it was.
TEST(CApiInPlace, OutputsNeverShareTheCallersInputs) {
  const std::string identity = identity_model();
  for (const char* backend : {"cpu", "vulkan"}) {
    SCOPED_TRACE(backend);
    kestrel_session_options o{};
    o.struct_size = sizeof o;
    o.backend = backend;
    kestrel_session* s = kestrel_session_create_from_bytes(identity.data(), identity.size(), &o);
    ASSERT_NE(s, nullptr) << kestrel_last_error();
    int64_t shape[] = {4};
    std::vector<float> x = {1, 2, 3, 4};
    kestrel_tensor in = {KESTREL_FLOAT32, 1, shape, x.data()};
    const char* names[] = {"x"};
    kestrel_outputs* out = kestrel_session_run(s, 1, names, &in);
    ASSERT_NE(out, nullptr) << kestrel_last_error();
    kestrel_tensor y{};
    ASSERT_EQ(kestrel_outputs_get(out, 0, &y), 0);
    EXPECT_NE(y.data, static_cast<const void*>(x.data()));
    std::fill(x.begin(), x.end(), -1.0f);
    x.clear();
    x.shrink_to_fit();
    const float* yv = static_cast<const float*>(y.data);
    EXPECT_EQ(std::vector<float>(yv, yv + 4), (std::vector<float>{1, 2, 3, 4}));
    kestrel_outputs_free(out);
    kestrel_session_free(s);
  }
}

// The process's settings through the C API: refused by name when out of
// range (the call returns nonzero, KESTREL_INVALID_ARGUMENT), taken when
// not; a zero field keeps its default.
TEST(CApiProcessOptions, AreCheckedAndTaken) {
  struct Case {
    void (*set)(kestrel_process_options&);
    const char* says;
  };
  const Case bad[] = {
      {[](kestrel_process_options& o) { o.cpu_isa = "avx3"; }, "unknown CPU instruction set 'avx3'"},
      {[](kestrel_process_options& o) { o.poison_outputs = 2; }, "poison_outputs must be 0 (default) or 1, got 2"},
      {[](kestrel_process_options& o) { o.pool_mb = -2; }, "pool_mb must be -1 (none), 0 (default) or more, got -2"},
      {[](kestrel_process_options& o) { o.struct_size = 4; }, "struct_size 4 is too small"},
  };
  for (const Case& c : bad) {
    kestrel_process_options o{};
    o.struct_size = sizeof o;
    c.set(o);
    EXPECT_NE(kestrel_set_process_options(&o), 0) << c.says;
    EXPECT_EQ(kestrel_last_error_code(), KESTREL_INVALID_ARGUMENT) << c.says;
    EXPECT_NE(std::string(kestrel_last_error()).find(c.says), std::string::npos) << kestrel_last_error();
  }
  EXPECT_NE(kestrel_set_process_options(nullptr), 0);
  kestrel_process_options o{};
  o.struct_size = sizeof o;
  o.pool_mb = 64;
  o.cpu_isa = "baseline";
  EXPECT_EQ(kestrel_set_process_options(&o), 0) << kestrel_last_error();
  // A session made now runs with them (the CPU kernels at the baseline).
  kestrel_session_options so{};
  so.struct_size = sizeof so;
  so.backend = "cpu";
  kestrel_session* s = kestrel_session_create(silero_path().c_str(), &so);
  EXPECT_NE(s, nullptr) << kestrel_last_error();
  kestrel_session_free(s);
  const kestrel_process_options defaults{sizeof(kestrel_process_options), 0, nullptr, 0};
  EXPECT_EQ(kestrel_set_process_options(&defaults), 0) << kestrel_last_error();
}

}  // namespace
}  // namespace kestrel

// The C API (src/api/kestrel.h): the same outputs as the C++ Session on a
// real model, and every misuse answered with NULL / nonzero and a message
// that names what was wrong.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "api/kestrel.h"
#include "cli_helpers.h"
#include "onnx_builders.h"
#include "real_models.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

struct Feeds {  // the C view of a name -> Tensor map
  std::vector<std::string> names;
  std::vector<const char*> name_ptrs;
  std::vector<kestrel_tensor> tensors;
  explicit Feeds(const std::map<std::string, Tensor>& in) {
    for (const auto& [n, t] : in) {
      names.push_back(n);
      tensors.push_back({int32_t(t.dtype()), int32_t(t.rank()), t.shape().data(), t.raw()});
    }
    for (const auto& n : names) name_ptrs.push_back(n.c_str());
  }
};

std::string silero_path() {
  std::string path = real_models::models_dir() + "/silero_vad.onnx";
  EXPECT_TRUE(std::filesystem::is_regular_file(path))
      << path << " is missing: run scripts/fetch_models.sh to download the models";
  return path;
}

std::map<std::string, Tensor> silero_feeds() {
  for (const auto& m : real_models::all())
    if (m.name == "silero_vad") return m.inputs(real_models::models_dir());
  ADD_FAILURE() << "silero_vad is not in the real model table";
  return {};
}

void expect_same_outputs(const char* backend) {
  std::string path = silero_path();
  auto feeds = silero_feeds();
  SessionOptions so;
  so.backend = parse_backend(backend);
  so.threads = 1;
  auto expected = Session::load(path, so)->run(feeds);

  kestrel_options opts = {backend, nullptr, 1};
  kestrel_session* s = kestrel_session_load(path.c_str(), &opts);
  ASSERT_NE(s, nullptr) << kestrel_last_error();
  EXPECT_EQ(std::string(kestrel_session_backend(s)).rfind(backend, 0), 0u) << kestrel_session_backend(s);
  ASSERT_EQ(kestrel_session_input_count(s), 3);
  EXPECT_STREQ(kestrel_session_input_name(s, 0), "input");
  ASSERT_EQ(kestrel_session_output_count(s), int32_t(expected.size()));
  EXPECT_STREQ(kestrel_session_output_name(s, 0), "output");

  Feeds c(feeds);
  for (int repeat = 0; repeat < 2; ++repeat) {  // a second run reuses the session's buffers
    kestrel_outputs* out = kestrel_session_run(s, c.tensors.size(), c.name_ptrs.data(), c.tensors.data());
    ASSERT_NE(out, nullptr) << kestrel_last_error();
    ASSERT_EQ(kestrel_outputs_count(out), int32_t(expected.size()));
    for (size_t i = 0; i < expected.size(); ++i) {
      kestrel_tensor t;
      ASSERT_EQ(kestrel_outputs_get(out, int32_t(i), &t), 0);
      EXPECT_EQ(t.dtype, int32_t(expected[i].dtype()));
      ASSERT_EQ(Shape(t.shape, t.shape + t.rank), expected[i].shape()) << "output " << i;
      EXPECT_EQ(std::memcmp(t.data, expected[i].raw(), expected[i].nbytes()), 0) << "output " << i;
    }
    kestrel_tensor all[4];  // every output in one call: the same views
    ASSERT_EQ(kestrel_outputs_get_all(out, all, 4), int32_t(expected.size()));
    for (size_t i = 0; i < expected.size(); ++i) {
      kestrel_tensor t;
      ASSERT_EQ(kestrel_outputs_get(out, int32_t(i), &t), 0);
      EXPECT_EQ(all[i].data, t.data);
      EXPECT_EQ(all[i].shape, t.shape);
      EXPECT_EQ(all[i].rank, t.rank);
      EXPECT_EQ(all[i].dtype, t.dtype);
    }
    EXPECT_EQ(kestrel_outputs_get_all(out, all, 1), int32_t(expected.size()));  // capacity 1: fills one
    EXPECT_EQ(kestrel_outputs_get_all(nullptr, all, 4), -1);
    kestrel_outputs_free(out);
  }
  kestrel_session_free(s);
}

TEST(CApi, SameOutputsAsTheSessionOnCpu) { expect_same_outputs("cpu"); }

TEST(CApi, SameOutputsAsTheSessionOnVulkan) {
  if (const char* off = std::getenv("KESTREL_VULKAN_TESTS"); off && std::string(off) == "off")
    GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  expect_same_outputs("vulkan");
}

// The output of a shell command (readelf, nm on the built library).
std::string command_output(const std::string& command) {
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
  }
  return out;
}

const std::string kLibrary = std::string(KESTREL_BINARY_DIR) + "/libkestrel.so";

// The version CMake was configured with (project(... VERSION)), from the
// library, from the CLI, and in the built library's SONAME.
TEST(CApi, VersionIsTheProjectsInTheLibraryTheCliAndTheSoname) {
  EXPECT_STREQ(kestrel_version(), KESTREL_PROJECT_VERSION);
  test::CliResult r = test::run_kestrel("--version");
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out;
  EXPECT_EQ(r.out, "kestrel " KESTREL_PROJECT_VERSION "\n");
  const std::string dynamic = command_output("readelf -d " + kLibrary);
  EXPECT_NE(dynamic.find("Library soname: [libkestrel.so." KESTREL_PROJECT_VERSION_MAJOR "]"), std::string::npos)
      << dynamic;
}

// libkestrel.so exports the C API and nothing else (cmake/kestrel.map): every
// function kestrel.h declares, no C++ symbol, no symbol of a library it links.
TEST(CApi, TheLibraryExportsTheCApiAlone) {
  const std::string symbols = command_output("nm -D --defined-only " + kLibrary + " | awk '{print $3}'");
  ASSERT_FALSE(symbols.empty()) << "nm found no symbols in " << kLibrary;
  std::istringstream lines(symbols);
  int exported = 0;
  for (std::string name; std::getline(lines, name);) {
    if (name.empty()) continue;
    ++exported;
    EXPECT_EQ(name.rfind("kestrel_", 0), 0u) << kLibrary << " exports " << name;
  }
  for (const char* api : {"kestrel_session_create", "kestrel_session_create_from_bytes", "kestrel_last_error_code",
                          "kestrel_session_run_with", "kestrel_outputs_get_all", "kestrel_version",
                          "kestrel_detector_detect_rgb8", "kestrel_text_reader_read_file", "kestrel_string_free"})
    EXPECT_NE(symbols.find(std::string(api) + "\n"), std::string::npos) << api << " is not exported";
  EXPECT_GE(exported, 25);
}

// Inputs and outputs with their declared element types and shapes: a fixed,
// a symbolic and an unnamed dim, and an output whose shape the model leaves
// to inference; misuse is refused with the call's name.
TEST(CApi, ValueInfoGivesTypesAndShapesWithSymbolicNames) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  test::add_input(g, "x", {"batch", 3});
  g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim();  // unnamed
  test::add_node(g, "Cast", {"x"}, {"y"}, "cast")->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("to");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(7);  // int64
    return a;
  }());
  test::add_output(g, "y");
  test::ModelFile file(m, "value_info");
  kestrel_options o = {"cpu", nullptr, 1};
  kestrel_session* s = kestrel_session_load(file.path.c_str(), &o);
  ASSERT_NE(s, nullptr) << kestrel_last_error();
  kestrel_value_info x;
  ASSERT_EQ(kestrel_session_input_info(s, 0, &x), 0) << kestrel_last_error();
  EXPECT_STREQ(x.name, "x");
  EXPECT_EQ(x.dtype, KESTREL_FLOAT32);
  ASSERT_EQ(x.rank, 3);
  EXPECT_EQ(x.dims[0], -1);
  EXPECT_STREQ(x.dim_names[0], "batch");
  EXPECT_EQ(x.dims[1], 3);
  EXPECT_STREQ(x.dim_names[1], "");
  EXPECT_EQ(x.dims[2], -1);
  EXPECT_STREQ(x.dim_names[2], "");
  kestrel_value_info y;
  ASSERT_EQ(kestrel_session_output_info(s, 0, &y), 0) << kestrel_last_error();
  EXPECT_STREQ(y.name, "y");
  EXPECT_EQ(y.dtype, KESTREL_INT64);  // inferred from the Cast
  ASSERT_EQ(y.rank, 3);
  EXPECT_STREQ(y.dim_names[0], "batch");
  EXPECT_NE(kestrel_session_input_info(s, 1, &x), 0);
  EXPECT_NE(std::string(kestrel_last_error()).find("kestrel_session_input_info: index 1 is not 0 to 0"),
            std::string::npos) << kestrel_last_error();
  EXPECT_NE(kestrel_session_output_info(s, 0, nullptr), 0);
  EXPECT_NE(std::string(kestrel_last_error()).find("info is NULL"), std::string::npos) << kestrel_last_error();
  EXPECT_NE(kestrel_session_input_info(nullptr, 0, &x), 0);
  kestrel_session_free(s);
}

TEST(CApi, MissingFileFailsWithItsPath) {
  EXPECT_EQ(kestrel_session_load("/nonexistent/model.onnx", nullptr), nullptr);
  EXPECT_NE(std::string(kestrel_last_error()).find("/nonexistent/model.onnx"), std::string::npos)
      << kestrel_last_error();
  EXPECT_EQ(kestrel_session_load(nullptr, nullptr), nullptr);
  EXPECT_NE(std::string(kestrel_last_error()).find("path is NULL"), std::string::npos);
}

// kestrel_limits: its fields reach the session, a shorter struct from an
// older header keeps the defaults of the fields it lacks, and bad values or a
// struct_size too small to hold any field are refused with their names.
TEST(CApi, LimitsAreReadUpToTheCallersStructSize) {
  std::string path = silero_path();
  kestrel_options opts = {"cpu", nullptr, 1};
  kestrel_limits limits = {sizeof(kestrel_limits), 0, 0, 0};
  kestrel_session* s = kestrel_session_load_with_limits(path.c_str(), &opts, &limits);
  ASSERT_NE(s, nullptr) << kestrel_last_error();
  kestrel_session_free(s);

  // An older caller's struct ends after max_loop_iterations: the negative
  // budget after it is never read.
  limits = {offsetof(kestrel_limits, device_memory_mb), 0, -5, 0};
  s = kestrel_session_load_with_limits(path.c_str(), &opts, &limits);
  EXPECT_NE(s, nullptr) << kestrel_last_error();
  kestrel_session_free(s);

  limits = {sizeof(kestrel_limits), 0, -5, 0};
  EXPECT_EQ(kestrel_session_load_with_limits(path.c_str(), &opts, &limits), nullptr);
  EXPECT_NE(std::string(kestrel_last_error()).find("device_memory_mb"), std::string::npos) << kestrel_last_error();

  limits = {sizeof(kestrel_limits), -2, 0, 0};
  EXPECT_EQ(kestrel_session_load_with_limits(path.c_str(), &opts, &limits), nullptr);
  EXPECT_NE(std::string(kestrel_last_error()).find("max_loop_iterations"), std::string::npos) << kestrel_last_error();

  limits = {sizeof(kestrel_limits), 0, 0, -1.0};
  EXPECT_EQ(kestrel_session_load_with_limits(path.c_str(), &opts, &limits), nullptr);
  EXPECT_NE(std::string(kestrel_last_error()).find("device_wait_s"), std::string::npos) << kestrel_last_error();

  limits = {4, 0, 0, 0};
  EXPECT_EQ(kestrel_session_load_with_limits(path.c_str(), &opts, &limits), nullptr);
  EXPECT_NE(std::string(kestrel_last_error()).find("struct_size"), std::string::npos) << kestrel_last_error();
}

TEST(CApi, BadRunsNameTheInput) {
  kestrel_options opts = {"cpu", nullptr, 1};
  kestrel_session* s = kestrel_session_load(silero_path().c_str(), &opts);
  ASSERT_NE(s, nullptr) << kestrel_last_error();
  auto feeds = silero_feeds();
  Feeds good(feeds);
  auto run_expecting = [&](Feeds& f, const std::string& message) {
    kestrel_outputs* out = kestrel_session_run(s, f.tensors.size(), f.name_ptrs.data(), f.tensors.data());
    EXPECT_EQ(out, nullptr);
    EXPECT_NE(std::string(kestrel_last_error()).find(message), std::string::npos)
        << "expected '" << message << "' in: " << kestrel_last_error();
    kestrel_outputs_free(out);
  };
  {
    Feeds f = good;  // an unknown name: the error lists the model's inputs
    f.name_ptrs[0] = "audio";
    run_expecting(f, "unknown input 'audio'; the model's inputs are: input, state, sr");
  }
  {
    Feeds f = good;
    f.name_ptrs.pop_back(), f.tensors.pop_back();  // "state" (names are sorted: input, sr, state)
    run_expecting(f, "missing input 'state'");
  }
  {
    Feeds f = good;
    // Run copies as many bytes as the declared type needs: give it float64's.
    std::vector<double> as_float64(size_t(feeds.at("input").numel()));
    f.tensors[0].dtype = KESTREL_FLOAT64;
    f.tensors[0].data = as_float64.data();
    run_expecting(f, "input 'input' must be float32, got float64");
  }
  {
    Feeds f = good;
    f.tensors[0].dtype = 8;  // ONNX's string type
    run_expecting(f, "input 'input': element type 8 is not one Kestrel takes");
  }
  {
    Feeds f = good;
    f.tensors[0].data = nullptr;
    run_expecting(f, "input 'input': no data for shape [1,576]");
  }
  {
    Feeds f = good;
    int64_t bad[2] = {1, -576};
    f.tensors[0].shape = bad;
    run_expecting(f, "input 'input': negative dimension in shape [1,-576]");
  }
  {
    Feeds f = good;
    f.name_ptrs[1] = f.name_ptrs[0];
    run_expecting(f, "input 'input' is given twice");
  }
  EXPECT_EQ(kestrel_session_run(nullptr, 0, nullptr, nullptr), nullptr);
  EXPECT_NE(std::string(kestrel_last_error()).find("session is NULL"), std::string::npos);

  kestrel_outputs* out = kestrel_session_run(s, good.tensors.size(), good.name_ptrs.data(), good.tensors.data());
  ASSERT_NE(out, nullptr) << kestrel_last_error();  // the session still runs after the failures
  kestrel_tensor t;
  EXPECT_NE(kestrel_outputs_get(out, 7, &t), 0);
  EXPECT_NE(std::string(kestrel_last_error()).find("no output 7"), std::string::npos);
  EXPECT_EQ(kestrel_session_input_name(s, 3), nullptr);
  EXPECT_EQ(kestrel_session_output_name(s, -1), nullptr);
  kestrel_outputs_free(out);
  kestrel_session_free(s);
}

}  // namespace
}  // namespace kestrel

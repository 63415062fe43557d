// Models built to attack the loader: invalid graphs ONNX Runtime refuses,
// attributes ONNX's shape inference divides by, and external data that
// reaches outside the model's folder. Each must be refused at load with one
// Error naming the node (name and op), attribute, tensor or file, never run
// to a wrong answer, crash the process or read a file it should not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include "hostile_models.h"
#include "onnx_builders.h"
#include "runtime/session.h"

using namespace kestrel;
using namespace kestrel::test;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

void expect_all(const std::string& msg, const std::vector<std::string>& parts) {
  for (const auto& p : parts) EXPECT_THAT(msg, HasSubstr(p));
}

class Hostile : public ::testing::TestWithParam<test::HostileModel> {};

TEST_P(Hostile, IsRefusedAtLoadNamingTheDefect) {
  expect_all(load_error(bytes_of(GetParam().build())), GetParam().error_has);
}

// The copy in the fuzzer's regression corpus is the same model.
TEST_P(Hostile, RegressionFileIsRefusedTheSameWay) {
  std::string path = std::string(KESTREL_SOURCE_DIR) + "/tests/fuzz/regressions/" + GetParam().name + ".onnx";
  ASSERT_TRUE(fs::exists(path)) << path << " is missing from the fuzzer's regression corpus";
  expect_all(load_file_error(path), GetParam().error_has);
}

INSTANTIATE_TEST_SUITE_P(HostileModels, Hostile, ::testing::ValuesIn(test::hostile_models()),
                         [](const auto& info) { return info.param.name; });

// Checks a model's opset may be newer than the schemas libonnx knows: a
// revised op's newer inputs and attributes still load, an unrevised op is
// still held to its schema.
TEST(HostileSchema, SplitAtOpset18WithNumOutputsLoadsAndRuns) {
  auto m = make_model(18);
  auto* g = m.mutable_graph();
  add_input(g, "x", {4});
  set_int(add_node(g, "Split", {"x"}, {"a", "b"}, "halves"), "num_outputs", 2);
  add_output(g, "a");
  add_output(g, "b");
  std::string bytes = bytes_of(m);
  auto s = Session::load_bytes(bytes.data(), bytes.size());
  auto out = s->run({{"x", Tensor::from_f32({4}, {1, 2, 3, 4})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].to_f32(), (std::vector<float>{3, 4}));
}

TEST(HostileSchema, AddWithFourInputsAtOpset21IsRefused) {
  auto m = make_model(21);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  add_node(g, "Add", {"x", "x", "x", "x"}, {"y"}, "sum4");
  add_output(g, "y");
  expect_all(load_error(bytes_of(m)), {"node 'sum4' (Add) has 4 inputs", "Add at opset 21 takes 2"});
}

TEST(HostileSchema, WronglyTypedAttributeOfARevisedOpIsRefused) {
  auto m = make_model(21);  // Transpose was revised at opset 21
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3});
  set_float(add_node(g, "Transpose", {"x"}, {"y"}, "flip"), "perm", 1.5f);
  add_output(g, "y");
  expect_all(load_error(bytes_of(m)), {"node 'flip' (Transpose)", "attribute 'perm' is FLOAT", "INTS"});
}

TEST(HostileSchema, UnknownAttributeIsRefused) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  set_int(add_node(g, "Relu", {"x"}, {"y"}, "act"), "slope", 2);
  add_output(g, "y");
  expect_all(load_error(bytes_of(m)), {"node 'act' (Relu)", "Unrecognized attribute: slope"});
}

TEST(HostileSchema, AttributeGivenTwiceIsRefused) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3});
  auto* n = add_node(g, "Softmax", {"x"}, {"y"}, "probs");
  set_int(n, "axis", 0);
  set_int(n, "axis", 1);
  add_output(g, "y");
  expect_all(load_error(bytes_of(m)), {"node 'probs' (Softmax)", "attribute 'axis' twice"});
}

TEST(HostileSchema, DeprecatedOpIsRefused) {
  auto m = make_model(10);  // Upsample is deprecated from opset 10 on (Resize replaces it)
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 2, 2});
  add_float_initializer(g, "scales", {4}, 2.0f);
  add_node(g, "Upsample", {"x", "scales"}, {"y"}, "up");
  add_output(g, "y");
  expect_all(load_error(bytes_of(m)), {"node 'up' (Upsample)", "deprecated since opset 10"});
}

// ONNX's inference divides the channels by blocksize squared; 2^32 squared
// wraps to 0 and stopped the process at load. (The run's own check on the
// blocksize is the kernel's.) The fuzzer's corpus holds this model too.
TEST(HostileInference, DepthToSpaceBlocksizeWhoseSquareWrapsDoesNotStopTheLoad) {
  std::string path = std::string(KESTREL_SOURCE_DIR) + "/tests/fuzz/regressions/DepthToSpace_blocksize_square_wraps.onnx";
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f) << path;
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromIstream(&f));
  ASSERT_EQ(m.graph().node(0).attribute(0).i(), int64_t(1) << 32);
  std::string bytes = bytes_of(m);
  EXPECT_NO_THROW(Session::load_bytes(bytes.data(), bytes.size()));
}

// External data: a folder per test holding the model and its data files.
class HostileExternalData : public ::testing::Test {
 protected:
  fs::path dir, outside;
  void SetUp() override {
    char tmpl[] = "/tmp/kestrel-hostile-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = fs::path(tmpl) / "model";
    outside = fs::path(tmpl) / "elsewhere";
    fs::create_directories(dir);
    fs::create_directories(outside);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir.parent_path(), ec);
  }
  // 24 bytes: the six floats 1..6, a [2,3] float tensor.
  static void write_floats(const fs::path& p) {
    std::ofstream f(p, std::ios::binary);
    for (float v : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}) f.write(reinterpret_cast<const char*>(&v), sizeof v);
  }
  // A model at dir/m.onnx whose output is its [2,3] float initializer `w`,
  // stored externally with these key/values.
  std::string model(const std::vector<std::pair<std::string, std::string>>& kv) {
      auto m = make_model();
    auto* g = m.mutable_graph();
    auto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(kFloat);
    w->add_dims(2);
    w->add_dims(3);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : kv) {
      auto* e = w->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    add_node(g, "Identity", {"w"}, {"y"}, "id");
    add_output(g, "y");
    std::string path = (dir / "m.onnx").string();
    std::ofstream(path, std::ios::binary) << bytes_of(m);
    return path;
  }
  static std::vector<float> run_output(const std::string& path) {
    auto s = Session::load(path);
    return s->run(std::map<std::string, Tensor>{})[0].to_f32();
  }
};

TEST_F(HostileExternalData, LinkToAFileOutsideTheFolderIsRefused) {
  write_floats(outside / "secret.bin");
  fs::create_symlink(outside / "secret.bin", dir / "weights.bin");
  expect_all(load_file_error(model({{"location", "weights.bin"}})),
             {"tensor 'w'", "external data location 'weights.bin' resolves to '", "outside the model's folder"});
}

TEST_F(HostileExternalData, LinkToAFolderOutsideIsRefused) {
  write_floats(outside / "secret.bin");
  fs::create_directory_symlink(outside, dir / "linkdir");
  expect_all(load_file_error(model({{"location", "linkdir/secret.bin"}})),
             {"tensor 'w'", "'linkdir/secret.bin' resolves to", "outside the model's folder"});
}

TEST_F(HostileExternalData, LinkToSystemFileIsRefused) {
  fs::create_symlink("/etc/passwd", dir / "weights.bin");
  expect_all(load_file_error(model({{"location", "weights.bin"}})), {"resolves to '/etc/passwd'", "outside"});
}

TEST_F(HostileExternalData, LinkThatStaysInsideTheFolderLoads) {
  fs::create_directories(dir / "data");
  write_floats(dir / "data" / "weights.bin");
  fs::create_symlink("data/weights.bin", dir / "weights.bin");
  EXPECT_EQ(run_output(model({{"location", "weights.bin"}})), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST_F(HostileExternalData, ModelFolderReachedThroughALinkLoads) {
  write_floats(dir / "weights.bin");
  std::string path = model({{"location", "weights.bin"}});
  fs::create_directory_symlink(dir, outside / "linked_model");
  EXPECT_EQ(run_output((outside / "linked_model" / "m.onnx").string()), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST_F(HostileExternalData, TwoDotsInsideANameAreNotAParentStep) {
  write_floats(dir / "w..bin");
  EXPECT_EQ(run_output(model({{"location", "w..bin"}})), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST_F(HostileExternalData, DotDotComponentIsRefusedEvenWhenItComesBack) {
  fs::create_directories(dir / "sub");
  write_floats(dir / "w.bin");
  expect_all(load_file_error(model({{"location", "sub/../w.bin"}})),
             {"tensor 'w'", "'sub/../w.bin' must be a relative path inside the model's folder"});
}

TEST_F(HostileExternalData, NegativeLengthIsRefused) {
  write_floats(dir / "weights.bin");
  expect_all(load_file_error(model({{"location", "weights.bin"}, {"length", "-1"}})),
             {"tensor 'w'", "'length' must not be negative, got -1"});
}

TEST_F(HostileExternalData, FifoIsRefusedWithoutWaitingForAWriter) {
  fs::path fifo = dir / "weights.bin";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string path = model({{"location", "weights.bin"}});
  auto pending = std::async(std::launch::async, [&] { return load_file_error(path); });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "loading blocked on the FIFO";
    std::ofstream release(fifo);  // a writer lets the blocked read end
  }
  expect_all(pending.get(), {"tensor 'w'", "is not a regular file"});
}

}  // namespace

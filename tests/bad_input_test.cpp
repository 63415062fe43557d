// Bad input must give a kestrel::Error that names what is wrong, never a
// crash, a hang, a huge allocation or a silently wrong result. Models are
// built here with ONNX's protobuf classes so each case holds one defect.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "onnx_builders.h"
#include "runtime/session.h"

using namespace kestrel;
using namespace kestrel::test;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

// x -> Identity -> y, the smallest model that runs today.
onnx::ModelProto identity_model() {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3});
  add_node(g, "Identity", {"x"}, {"y"}, "id");
  add_output(g, "y");
  return m;
}

// A model whose initializer `w` (float) feeds the output through Identity.
onnx::ModelProto initializer_model(onnx::TensorProto** w) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  *w = g->add_initializer();
  (*w)->set_name("w");
  (*w)->set_data_type(kFloat);
  add_node(g, "Identity", {"w"}, {"y"}, "id");
  add_output(g, "y");
  return m;
}

std::string run_error(const Session& s, const std::map<std::string, Tensor>& in) {
  try {
    s.run(in);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the run succeeded, but an Error was expected";
  return "";
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// A fresh folder per test, removed afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("kestrel_bad_input_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  fs::path dir_;
};

}  // namespace

// ---- Files that are not models ----

using BadFile = TempDirTest;

TEST_F(BadFile, TruncatedModelNamesPathAndParsing) {
  std::string full = bytes_of(identity_model());
  std::string path = write("half.onnx", full.substr(0, full.size() / 2));
  std::string msg = load_file_error(path);
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("protobuf parsing failed (truncated or not an ONNX file)"));
}

TEST_F(BadFile, EmptyFile) {
  std::string path = write("empty.onnx", "");
  std::string msg = load_file_error(path);
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("the model is empty (0 bytes)"));
}

TEST_F(BadFile, GarbageBytes) {
  std::string path = write("garbage.onnx", std::string(64, '\xff'));
  EXPECT_THAT(load_file_error(path), HasSubstr("not a valid ONNX model: protobuf parsing failed"));
}

TEST_F(BadFile, TextFile) {
  // A text-format dump is a plausible mistake; its bytes are not a binary ModelProto.
  std::string path = write("model.txt", "ir_version: 8\ngraph {\n  name: \"g\"\n}\n");
  EXPECT_THAT(load_file_error(path), HasSubstr("not a valid ONNX model: protobuf parsing failed"));
}

TEST_F(BadFile, MissingPath) {
  std::string path = (dir_ / "nope.onnx").string();
  EXPECT_THAT(load_file_error(path), HasSubstr("model file '" + path + "' does not exist"));
}

TEST_F(BadFile, DirectoryPath) {
  EXPECT_THAT(load_file_error(dir_.string()), HasSubstr("'" + dir_.string() + "' is a folder, not a model file"));
}

TEST(BadFileDevice, EndlessDeviceIsRefusedNotRead) {
  // Reading /dev/zero would never end.
  EXPECT_THAT(load_file_error("/dev/zero"), HasSubstr("'/dev/zero' is not a regular file"));
}

TEST(BadBytes, EmptyBufferAndNoGraph) {
  EXPECT_THAT(load_error(std::string()), HasSubstr("the model is empty (0 bytes)"));
  onnx::ModelProto m;
  m.set_ir_version(8);
  EXPECT_THAT(load_error(m), HasSubstr("holds no graph"));
}

// ---- Graph structure ----

TEST(BadGraph, UnknownOpNamesOpDomainOpsetAndNode) {
  auto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  add_node(g, "FrobnicateXYZ", {"x"}, {"y"}, "mystery_node");
  add_output(g, "y");
  std::string msg = load_error(m);
  EXPECT_THAT(msg, HasSubstr("node 'mystery_node' (FrobnicateXYZ)"));
  EXPECT_THAT(msg, HasSubstr("domain 'ai.onnx'"));
  EXPECT_THAT(msg, HasSubstr("opset 13"));
  EXPECT_THAT(msg, HasSubstr("no kernel for this op"));
}

TEST(BadGraph, UnknownCustomDomainOpNamesDomain) {
  auto m = make_model(13);
  auto* os = m.add_opset_import();
  os->set_domain("com.example.vendor");
  os->set_version(3);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  add_node(g, "Identity", {"x"}, {"y"}, "vendor_id")->set_domain("com.example.vendor");
  add_output(g, "y");
  std::string msg = load_error(m);
  EXPECT_THAT(msg, HasSubstr("node 'vendor_id' (com.example.vendor.Identity)"));
  EXPECT_THAT(msg, HasSubstr("domain 'com.example.vendor', opset 3"));
}

TEST(BadGraph, DomainNotImportedIsNamed) {
  auto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  add_node(g, "Thing", {"x"}, {"y"}, "orphan")->set_domain("org.unimported");
  add_output(g, "y");
  EXPECT_THAT(load_error(m), HasSubstr("node 'orphan' (org.unimported.Thing) uses domain 'org.unimported', which "
                                       "the model does not import"));
}

TEST(BadGraph, ThreeUnsupportedNodesInOneError) {
  auto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  add_node(g, "NoSuchOpA", {"x"}, {"a"}, "first");
  add_node(g, "Identity", {"a"}, {"b"}, "fine");
  add_node(g, "NoSuchOpB", {"b"}, {"c"}, "second");
  add_node(g, "NoSuchOpC", {"c"}, {"y"}, "third");
  add_output(g, "y");
  std::string msg = load_error(m);
  EXPECT_THAT(msg, HasSubstr("3 node(s) cannot run on Kestrel"));
  EXPECT_THAT(msg, HasSubstr("node 'first' (NoSuchOpA)"));
  EXPECT_THAT(msg, HasSubstr("node 'second' (NoSuchOpB)"));
  EXPECT_THAT(msg, HasSubstr("node 'third' (NoSuchOpC)"));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("'fine'")));
}

TEST(BadGraph, CycleNamesBothNodes) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  add_node(g, "Identity", {"q"}, {"p"}, "ping");
  add_node(g, "Identity", {"p"}, {"q"}, "pong");
  add_output(g, "p");
  std::string msg = load_error(m);
  EXPECT_THAT(msg, HasSubstr("the graph has a cycle"));
  EXPECT_THAT(msg, HasSubstr("node 'ping' (Identity)"));
  EXPECT_THAT(msg, HasSubstr("node 'pong' (Identity)"));
}

TEST(BadGraph, ValueNothingProducesIsNamed) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  add_node(g, "Identity", {"ghost"}, {"y"}, "reader");
  add_output(g, "y");
  EXPECT_THAT(load_error(m), HasSubstr("node 'reader' (Identity) reads 'ghost', which is neither a graph input, an "
                                       "initializer nor any node's output"));
}

TEST(BadGraph, ValueProducedTwiceNamesBothNodes) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  add_node(g, "Identity", {"x"}, {"y"}, "one");
  add_node(g, "Identity", {"x"}, {"y"}, "two");
  add_output(g, "y");
  EXPECT_THAT(load_error(m), HasSubstr("value 'y' is produced twice: by node 'one' (Identity) and by node 'two'"));
}

TEST(BadGraph, OutputNothingProducesIsNamed) {
  auto m = identity_model();
  add_output(m.mutable_graph(), "nowhere");
  EXPECT_THAT(load_error(m), HasSubstr("graph output 'nowhere' is not produced by any node, input or initializer"));
}

TEST(BadGraph, DeeplyNestedSubgraphsAreAnErrorNotAStackOverflow) {
  // 60 levels of If -> then_branch. Protobuf's parse depth limit (100
  // messages, three per graph level) refuses it before Kestrel recurses.
  onnx::GraphProto inner;
  inner.set_name("leaf");
  add_output(&inner, "c");
  for (int level = 0; level < 60; ++level) {
    onnx::GraphProto outer;
    outer.set_name("level" + std::to_string(level));
    auto* n = add_node(&outer, "If", {"c"}, {"r" + std::to_string(level)});
    auto* a = n->add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = inner;
    add_output(&outer, "r" + std::to_string(level));
    inner = outer;
  }
  auto m = make_model();
  *m.mutable_graph() = inner;
  add_input(m.mutable_graph(), "c", {}, onnx::TensorProto::BOOL);
  EXPECT_THAT(load_error(m), HasSubstr("protobuf parsing failed"));
}

TEST(BadGraph, SchemaInvalidNodeDoesNotCrashShapeInference) {
  // A Scan (opset 9) without its required num_scan_inputs made libonnx's
  // shape inference dereference null (found by fuzzing). The load's schema
  // check now refuses it, naming the node and the attribute, before anything
  // else (NoSuchOp included) is looked at.
  auto m = make_model(9);
  auto* g = m.mutable_graph();
  add_input(g, "init", {2});
  add_input(g, "xs", {3, 2});
  auto* scan = add_node(g, "Scan", {"init", "xs"}, {"sum", "ys"}, "scan");
  auto* a = scan->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  auto* body = a->mutable_g();
  body->set_name("body");
  add_input(body, "s_in", {2});
  add_input(body, "x", {2});
  add_node(body, "Identity", {"s_in"}, {"s_out"});
  add_node(body, "Identity", {"x"}, {"y"});
  add_output(body, "s_out");
  add_output(body, "y");
  add_node(g, "NoSuchOp", {"sum"}, {"out"}, "unknown");
  add_output(g, "out");
  add_output(g, "ys");
  std::string msg = load_error(m);
  EXPECT_THAT(msg, HasSubstr("node 'scan' (Scan)"));
  EXPECT_THAT(msg, HasSubstr("Required attribute 'num_scan_inputs' is missing"));
}

TEST(GoodGraph, ShapeInferenceStillFillsOutputShapes) {
  auto m = identity_model();  // its output 'y' has no declared type
  std::string b = bytes_of(m);
  auto s = Session::load_bytes(b.data(), b.size());
  ASSERT_EQ(s->outputs().size(), 1u);
  EXPECT_EQ(s->outputs()[0].dtype, DType::Float32);
  EXPECT_EQ(s->outputs()[0].shape_str(), "[2,3]");
}

// ---- Versions ----

// What onnx.helper.make_model in onnx 1.23 writes (IR version 14) loads and
// runs when every op and type it uses is Kestrel's; older than IR 3 is refused.
TEST(BadVersion, NewerIrVersionsLoadAndRun) {
  auto m = identity_model();
  m.set_ir_version(14);
  std::string b = bytes_of(m);
  auto s = Session::load_bytes(b.data(), b.size());
  Tensor x = Tensor::from_f32({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> y = s->run({{"x", x}});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].to_f32(), x.to_f32());
  m.set_ir_version(2);
  EXPECT_THAT(load_error(m), HasSubstr("ONNX IR version 2 is not supported (Kestrel reads 3 and later)"));
}

// A type newer IR versions add (float8 here) is refused by the value that has it.
TEST(BadVersion, ANewerElementTypeNamesTheValue) {
  auto m = identity_model();
  m.set_ir_version(11);
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(17);
  EXPECT_THAT(load_error(m), HasSubstr("value 'x' has ONNX element type 17 (FLOAT8E4M3FN), which Kestrel does not support"));
}

TEST(BadVersion, OpsetTooOld) {
  auto m = identity_model();
  m.mutable_opset_import(0)->set_version(6);
  EXPECT_THAT(load_error(m), HasSubstr("default-domain opset 6 is not supported (Kestrel runs opsets 7 to 21)"));
}

TEST(BadVersion, OpsetTooNew) {
  auto m = identity_model();
  m.mutable_opset_import(0)->set_version(22);
  EXPECT_THAT(load_error(m), HasSubstr("default-domain opset 22 is not supported (Kestrel runs opsets 7 to 21)"));
}

TEST(BadVersion, OpsetBeyondIntIsRefusedNotTruncated) {
  // 2^32 + 13 would read as opset 13 if narrowed to int.
  auto m = identity_model();
  m.mutable_opset_import(0)->set_version((int64_t(1) << 32) + 13);
  EXPECT_THAT(load_error(m), HasSubstr("has an invalid version 4294967309"));
}

TEST(BadVersion, NoDefaultDomainOpset) {
  auto m = identity_model();
  m.mutable_opset_import(0)->set_domain("ai.onnx.ml");
  EXPECT_THAT(load_error(m), HasSubstr("imports no default-domain (ai.onnx) opset"));
}

// ---- Initializers ----

TEST(BadInitializer, RawDataSizeDoesNotMatchDims) {
  onnx::TensorProto* w;
  auto m = initializer_model(&w);
  w->add_dims(2);
  w->add_dims(3);
  w->set_raw_data(std::string(20, '\0'));
  EXPECT_THAT(load_error(m),
              HasSubstr("tensor 'w' has 20 bytes of raw data, but shape [2,3] of float32 needs 24"));
}

TEST(BadInitializer, TypedDataCountDoesNotMatchDims) {
  onnx::TensorProto* w;
  auto m = initializer_model(&w);
  w->add_dims(4);
  w->add_float_data(1.0f);
  EXPECT_THAT(load_error(m), HasSubstr("tensor 'w' has 1 values for shape [4]"));
}

TEST(BadInitializer, NegativeDim) {
  onnx::TensorProto* w;
  auto m = initializer_model(&w);
  w->add_dims(3);
  w->add_dims(-2);
  EXPECT_THAT(load_error(m), HasSubstr("tensor 'w' has a negative dimension -2"));
}

TEST(BadInitializer, GiganticDimIsAnErrorNotBadAlloc) {
  onnx::TensorProto* w;
  auto m = initializer_model(&w);
  w->add_dims(int64_t(1) << 40);
  w->set_raw_data(std::string(4, '\0'));
  EXPECT_THAT(load_error(m), HasSubstr("tensor 'w' is too large"));
}

TEST(BadInitializer, LargeDeclaredShapeWithTinyDataIsCheckedBeforeAllocating) {
  // 2^30 floats (4 GiB) under the element limit: the size check must come
  // before the allocation, so this is quick and allocates nothing big.
  onnx::TensorProto* w;
  auto m = initializer_model(&w);
  w->add_dims(int64_t(1) << 30);
  w->set_raw_data(std::string(4, '\0'));
  EXPECT_THAT(load_error(m), HasSubstr("tensor 'w' has 4 bytes of raw data, but shape [1073741824] of float32 "
                                       "needs 4294967296"));
}

TEST(BadInitializer, UnsupportedElementTypeIsNamed) {
  onnx::TensorProto* w;
  auto m = initializer_model(&w);
  w->set_data_type(onnx::TensorProto::STRING);
  w->add_dims(1);
  w->add_string_data("hello");
  EXPECT_THAT(load_error(m), HasSubstr("tensor 'w' has element type 8 (string), which Kestrel does not support"));
}

// ---- External data ----

class ExternalData : public TempDirTest {
 protected:
  // A model with a [2,3] float initializer 'w' stored externally with these key/values.
  onnx::ModelProto model(const std::vector<std::pair<std::string, std::string>>& kv) {
    onnx::TensorProto* w;
    auto m = initializer_model(&w);
    w->add_dims(2);
    w->add_dims(3);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto& [k, v] : kv) {
      auto* e = w->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    return m;
  }
  std::string six_floats() {
    std::vector<float> v{1, 2, 3, 4, 5, 6};
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  }
};

TEST_F(ExternalData, ValidExternalDataLoadsAndRuns) {
  write("weights.bin", std::string(8, 'x') + six_floats());
  std::string path = write("m.onnx", bytes_of(model({{"location", "weights.bin"}, {"offset", "8"}, {"length", "24"}})));
  auto s = Session::load(path);
  auto out = s->run({});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_f32(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST_F(ExternalData, MissingFile) {
  std::string path = write("m.onnx", bytes_of(model({{"location", "absent.bin"}})));
  std::string msg = load_file_error(path);
  EXPECT_THAT(msg, HasSubstr("tensor 'w' external data file"));
  EXPECT_THAT(msg, HasSubstr("absent.bin' does not exist or is not a regular file"));
}

TEST_F(ExternalData, OffsetPastTheEnd) {
  write("weights.bin", six_floats());
  std::string path = write("m.onnx", bytes_of(model({{"location", "weights.bin"}, {"offset", "100"}})));
  EXPECT_THAT(load_file_error(path), HasSubstr("tensor 'w' external data at offset 100 with length 24 lies outside"));
}

TEST_F(ExternalData, HugeOffsetDoesNotOverflow) {
  write("weights.bin", six_floats());
  std::string path =
      write("m.onnx", bytes_of(model({{"location", "weights.bin"}, {"offset", "9223372036854775800"}})));
  EXPECT_THAT(load_file_error(path), HasSubstr("lies outside"));
}

TEST_F(ExternalData, LocationWithDotDot) {
  std::string path = write("m.onnx", bytes_of(model({{"location", "../secrets.bin"}})));
  EXPECT_THAT(load_file_error(path), HasSubstr("external data location '../secrets.bin' must be a relative path "
                                               "inside the model's folder"));
}

TEST_F(ExternalData, AbsoluteLocation) {
  std::string path = write("m.onnx", bytes_of(model({{"location", "/etc/passwd"}})));
  EXPECT_THAT(load_file_error(path), HasSubstr("external data location '/etc/passwd' must be a relative path"));
}

TEST_F(ExternalData, NonNumericOffsetIsAnError) {
  write("weights.bin", six_floats());
  std::string path = write("m.onnx", bytes_of(model({{"location", "weights.bin"}, {"offset", "12abc"}})));
  EXPECT_THAT(load_file_error(path), HasSubstr("external data 'offset' is not an integer: '12abc'"));
}

TEST_F(ExternalData, LengthThatDisagreesWithShape) {
  write("weights.bin", six_floats());
  std::string path = write("m.onnx", bytes_of(model({{"location", "weights.bin"}, {"length", "16"}})));
  EXPECT_THAT(load_file_error(path), HasSubstr("external data length 16 does not match 24 bytes for shape [2,3]"));
}

TEST(ExternalDataBytes, NeedsAFolder) {
  onnx::TensorProto* w;
  auto m = initializer_model(&w);
  w->add_dims(1);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  EXPECT_THAT(load_error(m), HasSubstr("external data 'w.bin' cannot be read: the model was not loaded from a file"));
}

// ---- Run-time inputs ----

// x: float32 [batch,3], y: float32 [batch,3]; both pass through Identity.
std::unique_ptr<Session> two_input_session() {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {"batch", 3});
  add_input(g, "y", {"batch", 3});
  add_node(g, "Identity", {"x"}, {"ox"}, "idx");
  add_node(g, "Identity", {"y"}, {"oy"}, "idy");
  add_output(g, "ox");
  add_output(g, "oy");
  std::string b = bytes_of(m);
  return Session::load_bytes(b.data(), b.size());
}

Tensor f32(const Shape& s) { return Tensor(DType::Float32, s); }

TEST(BadRunInput, WrongDtype) {
  auto s = two_input_session();
  EXPECT_THAT(run_error(*s, {{"x", Tensor(DType::Int64, {2, 3})}, {"y", f32({2, 3})}}),
              HasSubstr("input 'x' must be float32, got int64"));
}

TEST(BadRunInput, WrongRank) {
  auto s = two_input_session();
  EXPECT_THAT(run_error(*s, {{"x", f32({6})}, {"y", f32({2, 3})}}),
              HasSubstr("input 'x' must have rank 2 [batch,3], got shape [6]"));
}

TEST(BadRunInput, WrongFixedDim) {
  auto s = two_input_session();
  EXPECT_THAT(run_error(*s, {{"x", f32({2, 4})}, {"y", f32({2, 3})}}),
              HasSubstr("input 'x' dimension 1 must be 3 [batch,3], got shape [2,4]"));
}

TEST(BadRunInput, SymbolicDimBoundToTwoSizes) {
  auto s = two_input_session();
  EXPECT_THAT(run_error(*s, {{"x", f32({2, 3})}, {"y", f32({5, 3})}}),
              HasSubstr("input 'y' dimension 0 ('batch') is 5 but another input set 'batch' to 2"));
}

TEST(BadRunInput, MissingInput) {
  auto s = two_input_session();
  EXPECT_THAT(run_error(*s, {{"x", f32({2, 3})}}), HasSubstr("missing input 'y' (float32 [batch,3])"));
}

TEST(BadRunInput, UnknownInputNameListsValidNames) {
  auto s = two_input_session();
  EXPECT_THAT(run_error(*s, {{"x", f32({2, 3})}, {"y", f32({2, 3})}, {"z", f32({2, 3})}}),
              HasSubstr("unknown input 'z'; the model's inputs are: x, y"));
}

TEST(BadRunInput, UndefinedTensorHandle) {
  auto s = two_input_session();
  EXPECT_THAT(run_error(*s, {{"x", Tensor()}, {"y", f32({2, 3})}}),
              HasSubstr("input 'x' is an empty tensor handle"));
}

TEST(BadRunInput, ConsistentSymbolicDimRuns) {
  auto s = two_input_session();
  auto out = s->run({{"x", f32({4, 3})}, {"y", f32({4, 3})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (Shape{4, 3}));
  EXPECT_EQ(out[1].shape(), (Shape{4, 3}));
}

// ---- NaN and Inf ----
// Kestrel does not filter non-finite values: they follow IEEE 754 through
// every op. Identity and Constant move bits unchanged, NaN payload and the
// sign of zero included.

const std::vector<float> kSpecial = {std::numeric_limits<float>::quiet_NaN(),
                                     -std::numeric_limits<float>::quiet_NaN(),
                                     std::numeric_limits<float>::infinity(),
                                     -std::numeric_limits<float>::infinity(),
                                     -0.0f,
                                     std::numeric_limits<float>::denorm_min(),
                                     std::numeric_limits<float>::max()};

void expect_same_bits(const Tensor& t, const std::vector<float>& want) {
  ASSERT_EQ(t.dtype(), DType::Float32);
  ASSERT_EQ(t.numel(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(bits(t.data<float>()[i]), bits(want[i])) << "element " << i;
}

TEST(NonFinite, NanAndInfPassThroughIdentityBitExact) {
  std::vector<float> in = kSpecial;
  uint32_t payload_nan = 0x7fc12345;  // a quiet NaN with a payload
  float pn;
  std::memcpy(&pn, &payload_nan, 4);
  in.push_back(pn);
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {int64_t(in.size())});
  add_node(g, "Identity", {"x"}, {"a"}, "id1");
  add_node(g, "Identity", {"a"}, {"y"}, "id2");
  add_output(g, "y");
  std::string b = bytes_of(m);
  auto s = Session::load_bytes(b.data(), b.size());
  auto out = s->run({{"x", Tensor::from_f32({int64_t(in.size())}, in)}});
  ASSERT_EQ(out.size(), 1u);
  expect_same_bits(out[0], in);
}

TEST(NonFinite, NanAndInfFromConstantThroughIdentity) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  auto* c = add_node(g, "Constant", {}, {"k"}, "special_values");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  auto* t = a->mutable_t();
  t->set_data_type(kFloat);
  t->add_dims(int64_t(kSpecial.size()));
  for (float f : kSpecial) t->add_float_data(f);
  add_node(g, "Identity", {"k"}, {"y"}, "id");
  add_output(g, "y");
  std::string b = bytes_of(m);
  auto s = Session::load_bytes(b.data(), b.size());
  auto out = s->run({});
  ASSERT_EQ(out.size(), 1u);
  expect_same_bits(out[0], kSpecial);
}

TEST(NonFinite, HalfNanAndInfPassThroughIdentity) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {4}, onnx::TensorProto::FLOAT16);
  add_node(g, "Identity", {"x"}, {"y"}, "id");
  add_output(g, "y");
  std::string b = bytes_of(m);
  auto s = Session::load_bytes(b.data(), b.size());
  Tensor x(DType::Float16, {4});
  const uint16_t h[4] = {0x7e00, 0xfc00, 0x7c00, 0x8000};  // NaN, -inf, +inf, -0
  std::memcpy(x.raw(), h, sizeof h);
  auto out = s->run({{"x", x}});
  ASSERT_EQ(out[0].dtype(), DType::Float16);
  EXPECT_EQ(std::memcmp(out[0].raw(), h, sizeof h), 0);
}

// ---- Concurrency ----

TEST(Concurrency, EightThreadsShareOneSession) {
  // x: a chain of 16 Identity nodes (values freed along the way); y: Dropout,
  // whose mask output is allocated on every run; c: a Constant.
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {"batch", 3});
  add_input(g, "y", {"batch", 3});
  std::string prev = "x";
  for (int i = 0; i < 16; ++i) {
    std::string next = i == 15 ? "ox" : "x" + std::to_string(i);
    add_node(g, "Identity", {prev}, {next}, "id" + std::to_string(i));
    prev = next;
  }
  add_node(g, "Dropout", {"y"}, {"oy", "mask"}, "drop");
  auto* c = add_node(g, "Constant", {}, {"oc"}, "const");
  auto* a = c->add_attribute();
  a->set_name("value_float");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(2.5f);
  for (const char* o : {"ox", "oy", "mask", "oc"}) add_output(g, o);
  std::string b = bytes_of(m);
  auto s = Session::load_bytes(b.data(), b.size());

  constexpr int kThreads = 8, kRuns = 50;
  std::atomic<int> wrong{0}, errors{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        int64_t batch = 1 + (t + r) % 5;  // the symbolic dim varies between runs
        std::vector<float> xv(size_t(batch * 3)), yv(xv.size());
        for (size_t i = 0; i < xv.size(); ++i) {
          xv[i] = float(t * 100000 + r * 100 + int(i));
          yv[i] = -xv[i];
        }
        try {
          auto out = s->run({{"x", Tensor::from_f32({batch, 3}, xv)}, {"y", Tensor::from_f32({batch, 3}, yv)}});
          bool ok = out.size() == 4 && out[0].to_f32() == xv && out[1].to_f32() == yv &&
                    out[2].dtype() == DType::Bool && out[2].shape() == Shape{batch, 3} &&
                    out[2].to_i64() == std::vector<int64_t>(xv.size(), 1) && out[3].to_f32() == std::vector<float>{2.5f};
          if (!ok) ++wrong;
        } catch (const std::exception&) {
          ++errors;
        }
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(errors.load(), 0);
}

// Found by the loader fuzzer: a Loop body's Constant with 17 bytes of raw data
// for an int64 scalar. ONNX's shape inference read past it; Kestrel checks
// every tensor before inference runs and names the node.
TEST(FuzzRegression, LoopBodyConstantWithTooMuchRawData) {
  try {
    kestrel::Session::load(KESTREL_SOURCE_DIR "/tests/fuzz/regressions/loop_body_constant_raw_data_too_long.onnx");
    FAIL() << "expected an Error";
  } catch (const kestrel::Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("has 17 bytes of raw data"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("Loop_0"));
  }
}

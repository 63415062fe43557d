// Shapes chosen to overflow: element counts and byte sizes past int64, dims
// that wrap to small values, tensors too large for any address space, and the
// same numbers arriving through a .npy file, the CLI's --dim and the C API.
// Each must end in a kestrel::Error naming what is wrong, never a crash, a
// hang, a heap overrun or a silently wrong answer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "api/kestrel.h"
#include "cli_helpers.h"
#include "core/npy.h"
#include "onnx_builders.h"
#include "runtime/session.h"

using namespace kestrel;
using namespace kestrel::test;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

constexpr int64_t k2to32 = int64_t(1) << 32;
constexpr int64_t k2to62 = int64_t(1) << 62;
constexpr int64_t kInt64Max = INT64_MAX;

// ---- Small ONNX models (builders in onnx_builders.h) ----

std::unique_ptr<Session> load(const onnx::ModelProto& m) {
  std::string b = bytes_of(m);
  SessionOptions o;
  o.backend = BackendChoice::Cpu;
  o.threads = 2;
  return Session::load_bytes(b.data(), b.size(), o);
}

// The Error of running the model on these inputs; fails the test when the
// run succeeds. Any exception but kestrel::Error escapes and fails it too.
std::string run_error(const onnx::ModelProto& m, const std::map<std::string, Tensor>& in) {
  auto s = load(m);
  try {
    auto out = s->run(in);
    ADD_FAILURE() << "the run succeeded with output shape " << shape_str(out.at(0).shape())
                  << ", but an Error was expected";
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Tensor floats(const Shape& shape) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(i + 1);
  return t;
}

// x: float[4] reshaped to [2^62+1, 4], whose element count wraps to 4 in
// int64 arithmetic, then `follow` (Concat, Pad, Gather or Slice) on it.
onnx::ModelProto reshape_wrap_model(const std::string& follow) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {4});
  add_int64_initializer(g, "huge_shape", {k2to62 + 1, 4});
  add_node(g, "Reshape", {"x", "huge_shape"}, {"r"}, "to_huge");
  if (follow == "Concat") {
    set_int(add_node(g, "Concat", {"r", "r"}, {"y"}, "after"), "axis", 1);
  } else if (follow == "Pad") {
    add_int64_initializer(g, "pads", {0, 0, 0, 4});
    add_node(g, "Pad", {"r", "pads"}, {"y"}, "after");
  } else if (follow == "Gather") {
    add_int64_initializer(g, "idx", {3});
    set_int(add_node(g, "Gather", {"r", "idx"}, {"y"}, "after"), "axis", 0);
  } else {
    add_int64_initializer(g, "starts", {0});
    add_int64_initializer(g, "ends", {k2to62});
    add_int64_initializer(g, "axes", {0});
    add_node(g, "Slice", {"r", "starts", "ends", "axes"}, {"y"}, "after");
  }
  add_output(g, "y");
  return m;
}

}  // namespace

// ---- Element counts that overflow int64 ----

class ReshapeWrap : public ::testing::TestWithParam<const char*> {};

TEST_P(ReshapeWrap, IsRefusedAtTheReshapeNotOverrunAfterIt) {
  std::string msg = run_error(reshape_wrap_model(GetParam()), {{"x", floats({4})}});
  EXPECT_THAT(msg, HasSubstr("node 'to_huge' (Reshape)"));
  EXPECT_THAT(msg, HasSubstr("[4611686018427387905,4]"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

INSTANTIATE_TEST_SUITE_P(HostileShapes, ReshapeWrap, ::testing::Values("Concat", "Pad", "Gather", "Slice"));

TEST(HostileShapes, ExpandToACountPastInt64IsRefused) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {1});
  add_int64_initializer(g, "shape", {k2to32, k2to32});
  add_node(g, "Expand", {"x", "shape"}, {"y"}, "expand_huge");
  add_output(g, "y");
  std::string msg = run_error(m, {{"x", floats({1})}});
  EXPECT_THAT(msg, HasSubstr("node 'expand_huge' (Expand)"));
  EXPECT_THAT(msg, HasSubstr("[4294967296,4294967296]"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

TEST(HostileShapes, TileToACountPastInt64IsRefused) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1});
  add_int64_initializer(g, "reps", {k2to32, k2to32});
  add_node(g, "Tile", {"x", "reps"}, {"y"}, "tile_huge");
  add_output(g, "y");
  std::string msg = run_error(m, {{"x", floats({1, 1})}});
  EXPECT_THAT(msg, HasSubstr("node 'tile_huge' (Tile)"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

TEST(HostileShapes, TileWhoseDimWrapsToASmallOneIsRefused) {
  // 4 * (2^62 + 1) wraps to 4: a [4] output filled from a [2^62+1, 4] view.
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {4});
  add_int64_initializer(g, "reps", {k2to62 + 1});
  add_node(g, "Tile", {"x", "reps"}, {"y"}, "tile_wrap");
  add_output(g, "y");
  std::string msg = run_error(m, {{"x", floats({4})}});
  EXPECT_THAT(msg, HasSubstr("node 'tile_wrap' (Tile)"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

TEST(HostileShapes, ConstantOfShapePastInt64LoadsAndItsRunNamesTheNode) {
  // Transpose and Slice after it once crashed constant folding at load.
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {1});
  add_int64_initializer(g, "shape", {k2to32, k2to32});
  add_node(g, "ConstantOfShape", {"shape"}, {"c"}, "fill");
  add_node(g, "Transpose", {"c"}, {"t"}, "transpose");
  add_int64_initializer(g, "starts", {0});
  add_int64_initializer(g, "ends", {1});
  add_node(g, "Slice", {"t", "starts", "ends"}, {"s"}, "slice");
  add_node(g, "Add", {"s", "x"}, {"y"}, "add");
  add_output(g, "y");
  std::string msg = run_error(m, {{"x", floats({1})}});
  EXPECT_THAT(msg, HasSubstr("node 'fill' (ConstantOfShape)"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

TEST(HostileShapes, ConstantOfShapeIntoMaxPoolEndsWithAnError) {
  // [1,1,2^32,2^32] has 2^64 elements: counted in int64 that is 0, and the
  // pool then walked 2^64 windows.
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {1});
  add_int64_initializer(g, "shape", {1, 1, k2to32, k2to32});
  add_node(g, "ConstantOfShape", {"shape"}, {"c"}, "fill4d");
  set_ints(add_node(g, "MaxPool", {"c"}, {"p"}, "pool"), "kernel_shape", {2, 2});
  add_node(g, "Add", {"p", "x"}, {"y"}, "add");
  add_output(g, "y");
  std::string msg = run_error(m, {{"x", floats({1})}});
  EXPECT_THAT(msg, HasSubstr("node 'fill4d' (ConstantOfShape)"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

TEST(HostileShapes, ATensorLargerThanAnyAddressSpaceNamesItsBytes) {
  // 2^50 floats fit int64 but need 2^52 bytes: refused before allocating.
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {1});
  add_int64_initializer(g, "shape", {int64_t(1) << 25, int64_t(1) << 25});
  add_node(g, "Expand", {"x", "shape"}, {"big"}, "expand_big");
  add_output(g, "big");
  std::string msg = run_error(m, {{"x", floats({1})}});
  EXPECT_THAT(msg, HasSubstr("node 'expand_big' (Expand)"));
  EXPECT_THAT(msg, HasSubstr("output 'big'"));
  EXPECT_THAT(msg, HasSubstr("needs 4503599627370496 bytes"));
}

TEST(HostileShapes, AnOutputTheHostCannotAllocateIsNamed) {
  // 2^45 floats (2^47 bytes, 128 TiB) pass the 2^48-byte guard, but a
  // process' address space below 2^47 cannot hold them, whatever the
  // overcommit policy: the error names the output and its bytes.
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {1});
  add_int64_initializer(g, "shape", {int64_t(1) << 22, int64_t(1) << 23});
  add_node(g, "ConstantOfShape", {"shape"}, {"c"}, "fill_128tib");
  add_node(g, "Add", {"c", "x"}, {"y"}, "add");
  add_output(g, "y");
  std::string msg = run_error(m, {{"x", floats({1})}});
  EXPECT_THAT(msg, HasSubstr("node 'fill_128tib' (ConstantOfShape): output 'c'"));
  EXPECT_THAT(msg, HasSubstr("140737488355328 bytes"));
}

TEST(HostileShapes, PadsThatWrapTheOutputDimAreRefused) {
  // 4 + (2^63-1) + (2^63-1) wraps to 2: the run returned two zeros.
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {4});
  add_int64_initializer(g, "pads", {kInt64Max, kInt64Max});
  add_node(g, "Pad", {"x", "pads"}, {"y"}, "pad_wrap");
  add_output(g, "y");
  std::string msg = run_error(m, {{"x", floats({4})}});
  EXPECT_THAT(msg, HasSubstr("node 'pad_wrap' (Pad)"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

TEST(HostileShapes, ConcatWhoseAxisSumWrapsIsRefused) {
  // Four empty [2^62, 0] tensors: the axis sums to 2^64, which wrapped to 0.
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "a", {k2to62, 0});
  set_int(add_node(g, "Concat", {"a", "a", "a", "a"}, {"y"}, "concat_wrap"), "axis", 0);
  add_output(g, "y");
  std::string msg = run_error(m, {{"a", Tensor(DType::Float32, {k2to62, 0})}});
  EXPECT_THAT(msg, HasSubstr("node 'concat_wrap' (Concat)"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

TEST(HostileShapes, SplitSizesWhoseSumWrapsAreRefused) {
  // 2^62 * 3 + (2^62 + 4) wraps to 4, the axis' size.
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {4});
  add_int64_initializer(g, "split", {k2to62, k2to62, k2to62, k2to62 + 4});
  add_node(g, "Split", {"x", "split"}, {"a", "b", "c", "d"}, "split_wrap");
  for (const char* o : {"a", "b", "c", "d"}) add_output(g, o);
  std::string msg = run_error(m, {{"x", floats({4})}});
  EXPECT_THAT(msg, HasSubstr("node 'split_wrap' (Split)"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

TEST(HostileShapes, PoolWindowWhoseExtentWrapsIsRefused) {
  // dilation 2^62+1 over a 3-tap kernel spans 2^63+3, which wrapped
  // negative, so a 2-wide input seemed to hold two windows.
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 2});
  auto* n = add_node(g, "MaxPool", {"x"}, {"y"}, "pool_wrap");
  set_ints(n, "kernel_shape", {3});
  set_ints(n, "dilations", {k2to62 + 1});
  set_ints(n, "strides", {k2to62});
  add_output(g, "y");
  std::string msg = run_error(m, {{"x", floats({1, 1, 2})}});
  EXPECT_THAT(msg, HasSubstr("node 'pool_wrap' (MaxPool)"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

TEST(HostileShapes, BlocksizeWhoseSquareWrapsIsRefused) {
  // (2^32)^2 wrapped to 0, and channels % 0 stopped the process (SIGFPE).
  // The dims are symbolic so that the load's shape inference leaves the
  // channels alone and the kernel meets the blocksize.
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {"n", "n", "n", "n"});
  set_int(add_node(g, "DepthToSpace", {"x"}, {"y"}, "d2s_wrap"), "blocksize", k2to32);
  add_output(g, "y");
  std::string msg = run_error(m, {{"x", floats({1, 1, 1, 1})}});
  EXPECT_THAT(msg, HasSubstr("node 'd2s_wrap' (DepthToSpace)"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

TEST(HostileShapes, ResizeScaleBeyondInt64IsRefused) {
  // 1e30 * 4 is no int64: the conversion is undefined behaviour.
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 4});
  auto* sc = g->add_initializer();
  sc->set_name("scales");
  sc->set_data_type(onnx::TensorProto::FLOAT);
  sc->add_dims(2);
  sc->add_float_data(1.0f);
  sc->add_float_data(1e30f);
  add_node(g, "Resize", {"x", "", "scales"}, {"y"}, "resize_huge");
  add_output(g, "y");
  std::string msg = run_error(m, {{"x", floats({1, 4})}});
  EXPECT_THAT(msg, HasSubstr("node 'resize_huge' (Resize)"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

TEST(HostileShapes, ShapeNumelAndTensorBytesAreChecked) {
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({3, 0, 5}), 0);
  EXPECT_EQ(shape_numel({k2to32, k2to32 / 2 - 1}), k2to32 * (k2to32 / 2 - 1));
  try {
    shape_numel({k2to62 + 1, 4});
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the element count of shape [4611686018427387905,4] overflows int64"));
  }
  // A zero dim does not excuse the others: their product still sizes strides and loops.
  EXPECT_THROW(shape_numel({0, k2to32, k2to32}), Error);
  EXPECT_THROW(Tensor(DType::Float32, {k2to62, 2}), Error);  // 2^63 elements
  EXPECT_THROW(Tensor(DType::Float64, {k2to62 / 4, 2}), Error);  // 2^61 elements, 2^64 bytes
  EXPECT_THROW(Tensor(DType::UInt8, {-1}), Error);
}

// ---- .npy files ----

namespace {

class HostileNpy : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("kestrel_hostile_shapes_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A version-1.0 .npy file with this header dict (padded as numpy pads it) and data.
  std::string write(const std::string& dict, const std::string& data, char major = 1) {
    std::string header = dict;
    size_t prefix = major == 1 ? 10 : 12;
    header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string bytes = std::string("\x93NUMPY", 6) + major + '\0';
    uint32_t len = uint32_t(header.size());
    bytes.append(reinterpret_cast<const char*>(&len), major == 1 ? 2 : 4);
    bytes += header + data;
    std::string p = (dir_ / ("f" + std::to_string(count_++) + ".npy")).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string error_of(const std::string& path) {
    try {
      Tensor t = read_npy(path);
      ADD_FAILURE() << "'" << path << "' was read as " << shape_str(t.shape()) << ", but an Error was expected";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_THAT(msg, HasSubstr(path));
      return msg;
    }
    return "";
  }
  std::string dict(const std::string& shape, const std::string& descr = "'<f4'") {
    return "{'descr': " + descr + ", 'fortran_order': False, 'shape': " + shape + ", }";
  }
  fs::path dir_;
  int count_ = 0;
};

std::string zeros(size_t n) { return std::string(n, '\0'); }

}  // namespace

TEST_F(HostileNpy, ShapeWhoseCountOverflowsIsRefused) {
  std::string msg = error_of(write(dict("(4611686018427387905, 4)"), zeros(16)));
  EXPECT_THAT(msg, HasSubstr("overflows"));
}

TEST_F(HostileNpy, ShapeWhoseBytesOverflowAreRefused) {
  // 2^61 float64 elements fit int64; their 2^64 bytes do not.
  std::string msg = error_of(write(dict("(2305843009213693952,)", "'<f8'"), zeros(16)));
  EXPECT_THAT(msg, HasSubstr("bytes"));
}

TEST_F(HostileNpy, NegativeDimIsRefusedNotReadAsPositive) {
  EXPECT_THAT(error_of(write(dict("(-2, 4)"), zeros(32))), HasSubstr("shape"));
}

TEST_F(HostileNpy, NonIntegerDimsAreRefused) {
  EXPECT_THAT(error_of(write(dict("(1e1, 2)"), zeros(80))), HasSubstr("shape"));
  EXPECT_THAT(error_of(write(dict("(2, 'x', 4)"), zeros(32))), HasSubstr("shape"));
  EXPECT_THAT(error_of(write(dict("(2.5,)"), zeros(8))), HasSubstr("shape"));
}

TEST_F(HostileNpy, DimBeyondInt64IsAClearError) {
  std::string msg = error_of(write(dict("(99999999999999999999,)"), zeros(4)));
  EXPECT_THAT(msg, HasSubstr("99999999999999999999"));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("stoll")));
}

TEST_F(HostileNpy, RepeatedKeyTakesTheLastAsNumpyDoes) {
  std::string p = write("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'shape': (2,), }", zeros(8));
  Tensor t = read_npy(p);
  EXPECT_EQ(t.shape(), Shape({2}));
}

TEST_F(HostileNpy, MissingFortranOrderIsNamedAsMissing) {
  std::string msg = error_of(write("{'descr': '<f4', 'shape': (2,), }", zeros(8)));
  EXPECT_THAT(msg, HasSubstr("'fortran_order'"));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("is in Fortran order")));
}

TEST_F(HostileNpy, FortranOrderTrueIsRefused) {
  std::string msg = error_of(write("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", zeros(16)));
  EXPECT_THAT(msg, HasSubstr("Fortran order"));
}

TEST_F(HostileNpy, UnknownKeyAndMalformedDictAreRefused) {
  EXPECT_THAT(error_of(write("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", zeros(8))),
              HasSubstr("'extra'"));
  EXPECT_THAT(error_of(write("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", zeros(8))), HasSubstr("header"));
  EXPECT_THAT(error_of(write("{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", zeros(8))), HasSubstr("header"));
  EXPECT_THAT(error_of(write("{'descr': '<f4', 'fortran_order': Nope, 'shape': (2,)}", zeros(8))),
              HasSubstr("'fortran_order' is not True or False"));
  EXPECT_THAT(error_of(write("{'descr': '<f4', 'fortran_order': False, 'shape': 2}", zeros(8))), HasSubstr("shape"));
}

TEST_F(HostileNpy, DataLongerOrShorterThanTheShapeIsRefused) {
  EXPECT_THAT(error_of(write(dict("(2, 2)"), zeros(15))), HasSubstr("16"));
  EXPECT_THAT(error_of(write(dict("(2, 2)"), zeros(17))), HasSubstr("16"));
}

TEST_F(HostileNpy, BigEndianAndStructuredTypesAreRefused) {
  EXPECT_THAT(error_of(write(dict("(2,)", "'>f4'"), zeros(8))), HasSubstr("'>f4'"));
  EXPECT_THAT(error_of(write(dict("(2,)", "[('a', '<f4')]"), zeros(8))), HasSubstr("descr"));
}

TEST_F(HostileNpy, ValidFilesStillRead) {
  // numpy's own spellings: double quotes, no trailing comma, a scalar, version 2.0, an empty dim.
  Tensor a = read_npy(write("{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (2, 1)}", zeros(16)));
  EXPECT_EQ(a.shape(), Shape({2, 1}));
  EXPECT_EQ(a.dtype(), DType::Int64);
  Tensor s = read_npy(write(dict("()"), zeros(4)));
  EXPECT_EQ(s.shape(), Shape({}));
  Tensor v2 = read_npy(write(dict("(3,)", "'|u1'"), "abc", 2));
  EXPECT_EQ(v2.shape(), Shape({3}));
  EXPECT_EQ(v2.data<uint8_t>()[2], 'c');
  Tensor e = read_npy(write(dict("(0, 5)"), ""));
  EXPECT_EQ(e.shape(), Shape({0, 5}));
  // And what write_npy writes reads back.
  Tensor f = floats({2, 3});
  std::string p = (dir_ / "roundtrip.npy").string();
  write_npy(p, f);
  EXPECT_TRUE(read_npy(p).same_as(f));
}

// ---- The CLI's --dim ----

namespace {

// `kestrel run` on a model whose input x has the symbolic dim N; exit status and output.
std::pair<int, std::string> cli_run_with_dim(const std::string& dim) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {"N", 4});
  add_node(g, "Identity", {"x"}, {"y"}, "id");
  add_output(g, "y");
  const ModelFile file(m, "hostile_dim");
  const auto [status, out] = run_kestrel("run " + file.path + " --backend cpu --dim '" + dim + "' 2>&1");
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

}  // namespace

TEST(HostileDims, DimWhoseCountOverflowsIsRefused) {
  auto [rc, out] = cli_run_with_dim("N=4611686018427387905");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_THAT(out, HasSubstr("input 'x'"));
  EXPECT_THAT(out, HasSubstr("overflows"));
}

TEST(HostileDims, MalformedDimsAreNamed) {
  for (const char* bad : {"N=abc", "N=-3", "N=4x", "N=99999999999999999999", "N="}) {
    auto [rc, out] = cli_run_with_dim(bad);
    EXPECT_EQ(rc, 1) << bad << ": " << out;
    EXPECT_THAT(out, HasSubstr("--dim")) << bad;
    EXPECT_THAT(out, ::testing::Not(HasSubstr("stoll"))) << bad;
  }
  auto [rc, out] = cli_run_with_dim("N=3");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("[3,4]"));
}

// --shape NAME=D0,D1,...: the only way to size an unnamed dim; a dim left
// unset becomes 1 with a note saying so; a shape against the declared one,
// an unknown input and a bad size are refused by name.
TEST(HostileDims, ShapeSetsUnnamedDimsAndUnsetDimsAreSaid) {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {"N", 1, 4});
  g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->clear_dim_value();
  add_node(g, "Identity", {"x"}, {"y"}, "id");
  add_output(g, "y");
  const ModelFile file(m, "hostile_shape");
  auto run = [&](const std::string& flags) {
    const auto [status, out] = run_kestrel("run " + file.path + " --backend cpu " + flags + " 2>&1");
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out);
  };
  auto [rc, out] = run("");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("[1,1,4]"));
  EXPECT_THAT(out, HasSubstr("input 'x' dim 0 ('N') set to 1; --dim N=N or --shape sets it"));
  EXPECT_THAT(out, HasSubstr("input 'x' dim 1 (unnamed) set to 1; --shape x=... sets it"));
  std::tie(rc, out) = run("--shape x=2,5,4");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("[2,5,4]"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("set to 1")));
  for (const auto& [flags, says] : std::vector<std::pair<std::string, std::string>>{
           {"--shape x=2,5,3", "--shape x: dim 2 is 3, but the input is"},
           {"--shape x=2,5", "--shape x: rank 2, but the input is"},
           {"--shape z=1", "the model has no input 'z'"},
           {"--shape x=2,a,4", "--shape expects NAME=D0,D1,... with each size a whole number 0 or more, got 'x=2,a,4'"},
           {"--shape 2,5,4", "--shape expects NAME=D0,D1,..., got '2,5,4'"}}) {
    std::tie(rc, out) = run(flags);
    EXPECT_EQ(rc, 1) << flags << ": " << out;
    EXPECT_THAT(out, HasSubstr(says)) << flags;
  }
}

// ---- The C API's tensor intake ----

namespace {

// A C API session over x (float[N, 4], N symbolic) -> Identity -> y.
class HostileCApi : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = make_model();
    auto* g = m.mutable_graph();
    add_input(g, "x", {"N", 4});
    add_node(g, "Identity", {"x"}, {"y"}, "id");
    add_output(g, "y");
    path_ = (fs::temp_directory_path() / ("kestrel_hostile_capi_" + std::to_string(getpid()) + ".onnx")).string();
    std::ofstream(path_, std::ios::binary) << bytes_of(m);
    kestrel_options o = {"cpu", nullptr, 1};
    s_ = kestrel_session_load(path_.c_str(), &o);
    ASSERT_NE(s_, nullptr) << kestrel_last_error();
  }
  void TearDown() override {
    kestrel_session_free(s_);
    fs::remove(path_);
  }
  // The error of running with this tensor as x.
  std::string run_error(const kestrel_tensor& t) {
    const char* names[] = {"x"};
    kestrel_outputs* out = kestrel_session_run(s_, 1, names, &t);
    if (out) {
      kestrel_outputs_free(out);
      ADD_FAILURE() << "the run succeeded, but an error was expected";
      return "";
    }
    return kestrel_last_error();
  }
  std::string path_;
  kestrel_session* s_ = nullptr;
  float data_[4] = {1, 2, 3, 4};
};

}  // namespace

TEST_F(HostileCApi, ShapeWhoseCountOverflowsIsRefusedBeforeCopying) {
  int64_t shape[] = {k2to62 + 1, 4};
  std::string msg = run_error({KESTREL_FLOAT32, 2, shape, data_});
  EXPECT_THAT(msg, HasSubstr("input 'x'"));
  EXPECT_THAT(msg, HasSubstr("overflows"));
  int64_t bytes_overflow[] = {k2to62, 1};  // 2^62 floats: 2^64 bytes
  EXPECT_THAT(run_error({KESTREL_FLOAT32, 2, bytes_overflow, data_}), HasSubstr("input 'x'"));
}

TEST_F(HostileCApi, NegativeDimAndAbsurdRankAreRefused) {
  int64_t neg[] = {-1, 4};
  EXPECT_THAT(run_error({KESTREL_FLOAT32, 2, neg, data_}), HasSubstr("negative dimension"));
  // A rank of 2^31-1 would read 16 GiB of shape array past the caller's two dims.
  int64_t two[] = {1, 4};
  std::string msg = run_error({KESTREL_FLOAT32, INT32_MAX, two, data_});
  EXPECT_THAT(msg, HasSubstr("input 'x'"));
  EXPECT_THAT(msg, HasSubstr("rank 2147483647"));
}

TEST_F(HostileCApi, TensorBytesReportsWhatATensorNeeds) {
  int64_t ok[] = {1, 4};
  kestrel_tensor t = {KESTREL_FLOAT32, 2, ok, data_};
  EXPECT_EQ(kestrel_tensor_nbytes(&t), 16);
  int64_t wrap[] = {k2to62 + 1, 4};
  kestrel_tensor bad = {KESTREL_FLOAT32, 2, wrap, data_};
  EXPECT_EQ(kestrel_tensor_nbytes(&bad), -1);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("overflows"));
  EXPECT_EQ(kestrel_tensor_nbytes(nullptr), -1);
  // And a valid one runs.
  const char* names[] = {"x"};
  kestrel_outputs* out = kestrel_session_run(s_, 1, names, &t);
  ASSERT_NE(out, nullptr) << kestrel_last_error();
  kestrel_tensor y;
  ASSERT_EQ(kestrel_outputs_get(out, 0, &y), 0);
  EXPECT_EQ(static_cast<const float*>(y.data)[3], 4.0f);
  kestrel_outputs_free(out);
}

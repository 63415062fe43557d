// Data-movement and control-flow ops on cases the ONNX suite does not cover:
// bad indices and shapes, Transpose's blocked path on odd shapes, and If/Loop
// bodies that read values of the enclosing graph.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "runtime/session.h"

using namespace kestrel;

namespace {

onnx::ModelProto new_model(int opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  return m;
}

void declare(onnx::ValueInfoProto* vi, const std::string& name, int elem_type) {
  vi->set_name(name);
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& in,
                          const std::vector<std::string>& out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + std::to_string(g->node_size()));
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void set_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_graph(onnx::NodeProto* n, const std::string& name, const onnx::GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

std::unique_ptr<Session> load(const onnx::ModelProto& m, int threads = 0) {
  std::string bytes;
  m.SerializeToString(&bytes);
  SessionOptions opts;
  opts.threads = threads;
  return Session::load_bytes(bytes.data(), bytes.size(), opts);
}

// Runs expecting an Error and returns its message.
std::string error_of(const Session& s, const std::map<std::string, Tensor>& in) {
  try {
    s.run(in);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an Error";
  return "";
}

Tensor iota_f32(const Shape& shape) {
  std::vector<float> v(size_t(shape_numel(shape)));
  std::iota(v.begin(), v.end(), 0.0f);
  return Tensor::from_f32(shape, v);
}

constexpr int kFloat = onnx::TensorProto::FLOAT, kInt64 = onnx::TensorProto::INT64, kBool = onnx::TensorProto::BOOL;

}  // namespace

TEST(Movement, GatherOutOfRangeIndexIsAnError) {
  auto m = new_model(13);
  auto* g = m.mutable_graph();
  declare(g->add_input(), "x", kFloat);
  declare(g->add_input(), "i", kInt64);
  declare(g->add_output(), "y", kFloat);
  set_int(add_node(g, "Gather", {"x", "i"}, {"y"}), "axis", 1);
  auto s = load(m);
  std::string msg = error_of(*s, {{"x", iota_f32({2, 5})}, {"i", Tensor::from_i64({0, 7})}});
  EXPECT_NE(msg.find("Gather"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("size 5"), std::string::npos) << msg;
  // Negative indices within range count from the end.
  auto out = s->run({{"x", iota_f32({2, 5})}, {"i", Tensor::from_i64({-1})}});
  EXPECT_EQ(out[0].to_f32(), (std::vector<float>{4, 9}));
  EXPECT_THROW(s->run({{"x", iota_f32({2, 5})}, {"i", Tensor::from_i64({-6})}}), Error);
}

TEST(Movement, ReshapeElementCountMismatchNamesShapes) {
  auto m = new_model(14);
  auto* g = m.mutable_graph();
  declare(g->add_input(), "x", kFloat);
  declare(g->add_input(), "s", kInt64);
  declare(g->add_output(), "y", kFloat);
  add_node(g, "Reshape", {"x", "s"}, {"y"});
  auto s = load(m);
  std::string msg = error_of(*s, {{"x", iota_f32({2, 3, 4})}, {"s", Tensor::from_i64({5, -1})}});
  EXPECT_NE(msg.find("[2,3,4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[5,-1]"), std::string::npos) << msg;
  msg = error_of(*s, {{"x", iota_f32({2, 3, 4})}, {"s", Tensor::from_i64({5, 5})}});
  EXPECT_NE(msg.find("[2,3,4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[5,5]"), std::string::npos) << msg;
  auto out = s->run({{"x", iota_f32({2, 3, 4})}, {"s", Tensor::from_i64({0, -1})}});
  EXPECT_EQ(out[0].shape(), (Shape{2, 12}));
}

// Transpose against a direct index computation, over shapes that hit the
// blocked path with ragged tiles, unit dims and every element size.
TEST(Movement, TransposeMatchesNaiveOnOddShapes) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  std::vector<Case> cases = {
      {{3, 37, 41, 5}, {0, 2, 3, 1}},  // NCHW -> NHWC
      {{2, 33, 9, 40}, {0, 3, 1, 2}},  // NHWC -> NCHW
      {{67, 129}, {1, 0}},
      {{1, 45, 1, 70}, {3, 2, 1, 0}},
      {{4, 3, 35, 36}, {0, 1, 3, 2}},
      {{5, 7, 11, 13, 3}, {4, 2, 0, 3, 1}},
      {{8, 1, 50}, {2, 0, 1}},
      {{0, 12, 9}, {2, 1, 0}},
  };
  for (int elem : {int(onnx::TensorProto::FLOAT), int(onnx::TensorProto::FLOAT16), int(onnx::TensorProto::INT8),
                   int(onnx::TensorProto::INT64)}) {
    for (const Case& c : cases) {
      auto m = new_model(13);
      auto* g = m.mutable_graph();
      declare(g->add_input(), "x", elem);
      declare(g->add_output(), "y", elem);
      set_ints(add_node(g, "Transpose", {"x"}, {"y"}), "perm", c.perm);
      auto s = load(m, 2);
      DType dt = DType(elem);
      Tensor x(dt, c.shape);
      size_t es = dtype_size(dt);
      for (size_t b = 0; b < x.nbytes(); ++b) x.raw()[b] = uint8_t(b * 7 + b / es);
      Tensor y = s->run({{"x", x}})[0];
      size_t r = c.shape.size();
      Shape out(r);
      for (size_t k = 0; k < r; ++k) out[k] = c.shape[size_t(c.perm[k])];
      ASSERT_EQ(y.shape(), out);
      std::vector<int64_t> in_st(r, 1), idx(r, 0);
      for (size_t k = r - 1; k > 0; --k) in_st[k - 1] = in_st[k] * c.shape[k];
      for (int64_t e = 0; e < y.numel(); ++e) {
        int64_t rem = e, off = 0;
        for (size_t k = r; k-- > 0;) {
          off += (rem % out[k]) * in_st[size_t(c.perm[k])];
          rem /= out[k];
        }
        ASSERT_EQ(std::memcmp(y.raw() + size_t(e) * es, x.raw() + size_t(off) * es, es), 0)
            << "shape " << shape_str(c.shape) << " perm " << shape_str(c.perm) << " element " << e << " type "
            << dtype_name(dt);
      }
    }
  }
}

TEST(Movement, SliceNegativeStepsAndHugeEnds) {
  auto m = new_model(13);
  auto* g = m.mutable_graph();
  for (const char* n : {"x"}) declare(g->add_input(), n, kFloat);
  for (const char* n : {"st", "en", "ax", "sp"}) declare(g->add_input(), n, kInt64);
  declare(g->add_output(), "y", kFloat);
  add_node(g, "Slice", {"x", "st", "en", "ax", "sp"}, {"y"});
  auto s = load(m);
  auto run = [&](std::vector<int64_t> st, std::vector<int64_t> en, std::vector<int64_t> ax, std::vector<int64_t> sp) {
    return s->run({{"x", iota_f32({10})},
                   {"st", Tensor::from_i64(st)},
                   {"en", Tensor::from_i64(en)},
                   {"ax", Tensor::from_i64(ax)},
                   {"sp", Tensor::from_i64(sp)}})[0]
        .to_f32();
  };
  EXPECT_EQ(run({-1}, {INT64_MIN}, {0}, {-3}), (std::vector<float>{9, 6, 3, 0}));
  EXPECT_EQ(run({2}, {INT64_MAX}, {0}, {INT64_MAX}), (std::vector<float>{2}));
  EXPECT_EQ(run({20}, {-20}, {0}, {-4}), (std::vector<float>{9, 5, 1}));
  EXPECT_TRUE(run({5}, {2}, {0}, {1}).empty());
}

onnx::GraphProto branch(const std::string& name, const std::string& op, const std::string& in,
                        const std::string& out) {
  onnx::GraphProto b;
  b.set_name(name);
  add_node(&b, op, {in}, {out});
  declare(b.add_output(), out, kFloat);
  return b;
}

// If branches reading a value of the enclosing graph that the graph itself
// never reads (it must stay alive until the If runs), through a nested If too.
TEST(Movement, IfReadsOuterScopeValues) {
  auto m = new_model(13);
  auto* g = m.mutable_graph();
  declare(g->add_input(), "c", kBool);
  declare(g->add_input(), "x", kFloat);
  declare(g->add_output(), "y", kFloat);
  auto* k = add_node(g, "Constant", {}, {"axes"});
  auto* a = k->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(kInt64);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_int64_data(1);
  add_node(g, "Unsqueeze", {"x", "axes"}, {"xc"});  // [3] -> [3,1]

  onnx::GraphProto then_b;
  then_b.set_name("then");
  auto* nested = add_node(&then_b, "If", {"c"}, {"t"});
  set_graph(nested, "then_branch", branch("inner_then", "Transpose", "xc", "tt"));
  set_graph(nested, "else_branch", branch("inner_else", "Identity", "xc", "te"));
  declare(then_b.add_output(), "t", kFloat);
  auto* top_if = add_node(g, "If", {"c"}, {"y"});
  set_graph(top_if, "then_branch", then_b);
  set_graph(top_if, "else_branch", branch("else", "Identity", "xc", "e"));

  auto s = load(m);
  Tensor x = Tensor::from_f32({3}, {1, 2, 3});
  for (bool c : {true, false}) {
    Tensor ct(DType::Bool, {});
    *ct.data<bool>() = c;
    Tensor y = s->run({{"c", ct}, {"x", x}})[0];
    EXPECT_EQ(y.shape(), c ? Shape({1, 3}) : Shape({3, 1}));
    EXPECT_EQ(y.to_f32(), (std::vector<float>{1, 2, 3}));
  }
}

// Loop with a trip count, a loop-carried value that grows by an outer value
// each iteration and a scan output stacked along a new axis 0.
TEST(Movement, LoopCarriesValuesAndStacksScans) {
  auto m = new_model(13);
  auto* g = m.mutable_graph();
  declare(g->add_input(), "M", kInt64);
  declare(g->add_input(), "x", kFloat);
  declare(g->add_output(), "v", kFloat);
  declare(g->add_output(), "its", kInt64);
  onnx::GraphProto body;
  body.set_name("body");
  declare(body.add_input(), "i", kInt64);
  declare(body.add_input(), "cond_in", kBool);
  declare(body.add_input(), "v_in", kFloat);
  set_int(add_node(&body, "Concat", {"v_in", "x"}, {"v_out"}), "axis", 0);
  add_node(&body, "Identity", {"cond_in"}, {"cond_out"});
  add_node(&body, "Identity", {"i"}, {"i_out"});
  declare(body.add_output(), "cond_out", kBool);
  declare(body.add_output(), "v_out", kFloat);
  declare(body.add_output(), "i_out", kInt64);
  body.mutable_output(2)->mutable_type()->mutable_tensor_type()->mutable_shape();  // a scalar
  set_graph(add_node(g, "Loop", {"M", "", "x"}, {"v", "its"}), "body", body);

  auto s = load(m);
  Tensor x = Tensor::from_f32({2}, {5, 6});
  auto out = s->run({{"M", Tensor::scalar_i64(3)}, {"x", x}});
  EXPECT_EQ(out[0].to_f32(), (std::vector<float>{5, 6, 5, 6, 5, 6, 5, 6}));
  EXPECT_EQ(out[1].shape(), Shape({3}));
  EXPECT_EQ(out[1].to_i64(), (std::vector<int64_t>{0, 1, 2}));
  out = s->run({{"M", Tensor::scalar_i64(0)}, {"x", x}});
  EXPECT_EQ(out[0].to_f32(), (std::vector<float>{5, 6}));
  EXPECT_EQ(out[1].shape(), Shape({0}));
}

// A scalar has no axis 0 to slice or squeeze: an error, not a read past the shape.
TEST(Movement, SliceAndSqueezeOfAScalarAreErrors) {
  auto m = new_model(13);
  auto* g = m.mutable_graph();
  declare(g->add_input(), "x", kFloat);
  declare(g->add_input(), "st", kInt64);
  declare(g->add_input(), "en", kInt64);
  declare(g->add_input(), "ax", kInt64);
  declare(g->add_output(), "y", kFloat);
  declare(g->add_output(), "z", kFloat);
  add_node(g, "Slice", {"x", "st", "en", "ax"}, {"y"});
  add_node(g, "Squeeze", {"x", "ax"}, {"z"});
  auto s = load(m);
  std::string msg = error_of(*s, {{"x", Tensor::scalar_f32(1)}, {"st", Tensor::from_i64({0})},
                                  {"en", Tensor::from_i64({1})}, {"ax", Tensor::from_i64({0})}});
  EXPECT_NE(msg.find("out of range for rank 0"), std::string::npos) << msg;
}

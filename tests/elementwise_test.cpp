// Checks of the elementwise ops that the ONNX suite does not make: broadcast
// segment planning on odd and large shapes against a per-element reference,
// NaN propagation, integer division by zero, and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "backends/cpu/executor.h"
#include "ops/elementwise.h"

using namespace kestrel;

namespace {

// Runs one node over the given inputs on the CPU executor with 2 threads.
std::vector<Tensor> run_node(const std::string& op, const std::vector<Tensor>& inputs, int num_outputs = 1,
                             std::map<std::string, ir::Attribute> attrs = {}, int opset = 17) {
  ir::Graph g;
  g.name = "test";
  ir::Node n;
  n.name = op + "_node";
  n.op_type = op;
  n.opset = opset;
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    int v = g.add_value("in" + std::to_string(i));
    g.values[size_t(v)].dtype = inputs[i].dtype();
    g.inputs.push_back(v);
    n.inputs.push_back(v);
  }
  for (int i = 0; i < num_outputs; ++i) {
    int v = g.add_value("out" + std::to_string(i));
    g.outputs.push_back(v);
    n.outputs.push_back(v);
  }
  g.nodes.push_back(n);
  auto plan = backends::cpu::Plan::build(g);
  backends::RunOptions opts;
  opts.threads = 2;
  return backends::cpu::execute(plan, inputs, nullptr, opts);
}

Tensor random_f32(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  std::vector<float> v(size_t(shape_numel(s)));
  for (float& x : v) x = d(rng);
  return Tensor::from_f32(s, v);
}

template <typename T>
Tensor make(DType dt, const Shape& s, const std::vector<T>& v) {
  Tensor t(dt, s);
  std::copy(v.begin(), v.end(), t.data<T>());
  return t;
}

// Offset of output multi-index `idx` in an input of shape `in` broadcast to `out`.
int64_t bcast_offset(const Shape& in, const Shape& out, const std::vector<int64_t>& idx) {
  int64_t off = 0, stride = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    size_t i = in.size() - 1 - k, o = out.size() - 1 - k;
    if (in[i] != 1) off += idx[o] * stride;
    stride *= in[i];
  }
  return off;
}

// Walks every output element with an explicit multi-index (the slow, obvious way).
template <typename F>
void for_each_index(const Shape& out, F f) {
  std::vector<int64_t> idx(out.size(), 0);
  for (int64_t n = 0; n < shape_numel(out); ++n) {
    f(n, idx);
    for (int d = int(out.size()) - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < out[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
}

TEST(Elementwise, BinaryBroadcastMatchesPerElementReference) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3, 5, 7}, {3, 1, 7}},     {{1, 64, 13, 17}, {1, 64, 1, 1}}, {{5, 1, 4}, {1, 3, 1}},
      {{7}, {}},                     {{}, {2, 3}},                     {{2, 1, 3, 1, 5}, {1, 4, 1, 6, 1}},
      {{3, 40000}, {3, 1}},          {{70001, 2}, {1, 2}},             {{1, 1}, {1}},
      {{2, 33000}, {2, 33000}},      {{4, 0, 3}, {1, 3}},              {{9, 1, 1, 5}, {9, 5}},
  };
  uint32_t seed = 1;
  for (auto& [sa, sb] : cases) {
    for (int swap = 0; swap < 2; ++swap) {
      const Shape& x = swap ? sb : sa;
      const Shape& y = swap ? sa : sb;
      Tensor a = random_f32(x, seed++), b = random_f32(y, seed++);
      Tensor got = run_node("Sub", {a, b})[0];
      Shape out(std::max(x.size(), y.size()));
      for (size_t i = 0; i < out.size(); ++i) {
        auto dim = [&](const Shape& s) { return i + s.size() < out.size() ? 1 : s[i + s.size() - out.size()]; };
        out[i] = std::max(dim(x), dim(y));
        if (dim(x) == 0 || dim(y) == 0) out[i] = 0;
      }
      ASSERT_EQ(got.shape(), out) << shape_str(x) << " - " << shape_str(y);
      int bad = 0;
      for_each_index(out, [&](int64_t n, const std::vector<int64_t>& idx) {
        float want = a.data<float>()[bcast_offset(x, out, idx)] - b.data<float>()[bcast_offset(y, out, idx)];
        if (got.data<float>()[n] != want && bad++ < 3)
          ADD_FAILURE() << shape_str(x) << " - " << shape_str(y) << " at " << n << ": " << got.data<float>()[n]
                        << " != " << want;
      });
    }
  }
}

TEST(Elementwise, WhereThreeWayBroadcastMatchesReference) {
  Shape sc{4, 1, 6}, sx{3, 1}, sy{1, 3, 6};
  Tensor c(DType::Bool, sc);
  for (int64_t i = 0; i < c.numel(); ++i) c.data<bool>()[i] = (i * 7) % 3 == 0;
  Tensor x = random_f32(sx, 11), y = random_f32(sy, 12);
  Tensor got = run_node("Where", {c, x, y})[0];
  Shape out{4, 3, 6};
  ASSERT_EQ(got.shape(), out);
  for_each_index(out, [&](int64_t n, const std::vector<int64_t>& idx) {
    float want = c.data<bool>()[bcast_offset(sc, out, idx)] ? x.data<float>()[bcast_offset(sx, out, idx)]
                                                            : y.data<float>()[bcast_offset(sy, out, idx)];
    EXPECT_EQ(got.data<float>()[n], want) << "at " << n;
  });
}

TEST(Elementwise, NaNPropagates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_f32({4}, {nan, 1.0f, -2.0f, nan});
  Tensor y = Tensor::from_f32({4}, {1.0f, nan, 3.0f, nan});
  for (const char* op : {"Relu", "Sigmoid", "Exp", "Tanh", "HardSwish", "LeakyRelu", "Clip", "Softplus"}) {
    Tensor r = run_node(op, {x})[0];
    EXPECT_TRUE(std::isnan(r.data<float>()[0])) << op;
    EXPECT_FALSE(std::isnan(r.data<float>()[1])) << op;
  }
  for (const char* op : {"Max", "Min"}) {
    Tensor r = run_node(op, {x, y})[0];
    EXPECT_TRUE(std::isnan(r.data<float>()[0])) << op << "(NaN, 1)";
    EXPECT_TRUE(std::isnan(r.data<float>()[1])) << op << "(1, NaN)";
    EXPECT_EQ(r.data<float>()[2], std::string(op) == "Max" ? 3.0f : -2.0f) << op;
    EXPECT_TRUE(std::isnan(r.data<float>()[3])) << op;
  }
}

TEST(Elementwise, FastExpIsAccurateAndSaturates) {
  for (float x = -110.0f; x < 90.0f; x += 0.01234f) {
    float want = std::exp(x), got = ops::ew::fast_exp(x);
    if (want == 0 || std::isinf(want)) EXPECT_EQ(got, want) << x;
    else if (want > 1e-37f) EXPECT_NEAR(got / want, 1.0f, 4e-7f) << x;
    else EXPECT_NEAR(got, want, 1e-44f) << x;  // subnormal results
  }
  EXPECT_EQ(ops::ew::fast_exp(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(ops::ew::fast_exp(-std::numeric_limits<float>::infinity()), 0.0f);
}

TEST(Elementwise, FastTanhAndErfAreAccurate) {
  for (float x = -9.0f; x < 9.0f; x += 0.000731f) {
    EXPECT_NEAR(ops::ew::fast_tanh(x), std::tanh(x), 6e-7f * std::fabs(std::tanh(x)) + 1e-12f) << x;
    EXPECT_NEAR(ops::ew::fast_erf(x), std::erf(x), 6e-7f * std::fabs(std::erf(x)) + 1e-12f) << x;
  }
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(ops::ew::fast_tanh(nan)));
  EXPECT_TRUE(std::isnan(ops::ew::fast_erf(nan)));
  EXPECT_EQ(ops::ew::fast_tanh(-inf), -1.0f);
  EXPECT_EQ(ops::ew::fast_erf(inf), 1.0f);
}

TEST(Elementwise, IntegerDivisionByZeroIsDefined) {
  const int32_t mn = std::numeric_limits<int32_t>::min();
  Tensor a = make<int32_t>(DType::Int32, {5}, {7, -7, mn, 5, -7});
  Tensor b = make<int32_t>(DType::Int32, {5}, {0, 0, -1, 2, 2});
  Tensor q = run_node("Div", {a, b})[0];
  EXPECT_EQ(std::vector<int32_t>(q.data<int32_t>(), q.data<int32_t>() + 5),
            (std::vector<int32_t>{0, 0, mn, 2, -3}));  // 0 for /0; MIN/-1 wraps; truncation toward 0
  ir::Attribute fmod;
  fmod.i = 1;
  Tensor m1 = run_node("Mod", {a, b}, 1, {{"fmod", fmod}})[0];
  EXPECT_EQ(std::vector<int32_t>(m1.data<int32_t>(), m1.data<int32_t>() + 5), (std::vector<int32_t>{0, 0, 0, 1, -1}));
  Tensor m0 = run_node("Mod", {a, b})[0];
  EXPECT_EQ(std::vector<int32_t>(m0.data<int32_t>(), m0.data<int32_t>() + 5), (std::vector<int32_t>{0, 0, 0, 1, 1}));
  Tensor u = make<uint8_t>(DType::UInt8, {2}, {9, 9});
  Tensor z = make<uint8_t>(DType::UInt8, {2}, {0, 4});
  Tensor uq = run_node("Div", {u, z})[0];
  EXPECT_EQ(uq.data<uint8_t>()[0], 0);
  EXPECT_EQ(uq.data<uint8_t>()[1], 2);
}

TEST(Elementwise, ErrorsNameTheNodeAndShapes) {
  try {
    run_node("Add", {random_f32({2, 3}, 1), random_f32({4}, 2)});
    FAIL() << "Add of [2,3] and [4] must fail";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'Add_node' (Add)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2,3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4]"), std::string::npos) << msg;
  }
  // PRelu's slope must broadcast to X alone, not X to the slope.
  EXPECT_THROW(run_node("PRelu", {random_f32({3}, 1), random_f32({2, 3}, 2)}), Error);
  // Mixed input types are rejected rather than reinterpreted.
  EXPECT_THROW(run_node("Add", {random_f32({3}, 1), make<int32_t>(DType::Int32, {3}, {1, 2, 3})}), Error);
  ir::Attribute to;
  to.i = int64_t(DType::String);
  EXPECT_THROW(run_node("Cast", {random_f32({3}, 1)}, 1, {{"to", to}}), Error);
}

TEST(Elementwise, CastHalfAndBoolDirectly) {
  Tensor x = Tensor::from_f32({4}, {1.5f, -0.0f, 65504.0f, std::numeric_limits<float>::quiet_NaN()});
  ir::Attribute to;
  to.i = int64_t(DType::Float16);
  Tensor h = run_node("Cast", {x}, 1, {{"to", to}})[0];
  ASSERT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(h.data<uint16_t>()[0], float_to_half(1.5f));
  EXPECT_EQ(h.data<uint16_t>()[2], 0x7bff);
  to.i = int64_t(DType::Bool);
  Tensor b = run_node("Cast", {h}, 1, {{"to", to}})[0];
  EXPECT_EQ(std::vector<bool>(b.data<bool>(), b.data<bool>() + 4), (std::vector<bool>{true, false, true, true}));
}

}  // namespace

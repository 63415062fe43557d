// Edge cases of NonMaxSuppression, RoiAlign, QLinearConv, Unique and DFT
// that ONNX's backend suite does not cover.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "backends/cpu/executor.h"
#include "core/tensor.h"

using namespace kestrel;

namespace {

ir::Attribute integer(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Int;
  a.i = v;
  return a;
}
ir::Attribute ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}

// Runs one node of `op` (at `opset`) with `num_outputs` outputs on the CPU executor.
std::vector<Tensor> run_node(const std::string& op, const std::vector<Tensor>& inputs, int num_outputs = 1,
                             std::map<std::string, ir::Attribute> attrs = {}, int opset = 17) {
  ir::Graph g;
  g.name = "test";
  ir::Node n;
  n.name = "n";
  n.op_type = op;
  n.opset = opset;
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    int v = g.add_value("in" + std::to_string(i));
    g.inputs.push_back(v);
    n.inputs.push_back(v);
  }
  for (int i = 0; i < num_outputs; ++i) {
    int v = g.add_value("out" + std::to_string(i));
    n.outputs.push_back(v);
    g.outputs.push_back(v);
  }
  g.nodes.push_back(n);
  backends::cpu::Plan plan = backends::cpu::Plan::build(g);
  backends::RunOptions opts;
  opts.threads = 2;
  return backends::cpu::execute(plan, inputs, nullptr, opts);
}

template <typename T>
Tensor make(DType t, const Shape& s, const std::vector<T>& v) {
  Tensor x(t, s);
  for (size_t i = 0; i < v.size(); ++i) x.data<T>()[i] = v[i];
  return x;
}

Tensor scalar_f(float v) { return Tensor::scalar_f32(v); }

TEST(NonMaxSuppression, ZeroBoxesGivesNoSelection) {
  Tensor boxes(DType::Float32, {1, 0, 4}), scores(DType::Float32, {1, 2, 0});
  Tensor out = run_node("NonMaxSuppression", {boxes, scores, Tensor::from_i64({10}), scalar_f(0.5f)}).at(0);
  EXPECT_EQ(shape_str(out.shape()), "[0,3]");
}

TEST(NonMaxSuppression, MaxOutputZeroSelectsNothing) {
  Tensor boxes = Tensor::from_f32({1, 2, 4}, {0, 0, 1, 1, 0, 2, 1, 3});
  Tensor scores = Tensor::from_f32({1, 1, 2}, {0.9f, 0.8f});
  Tensor out = run_node("NonMaxSuppression", {boxes, scores, Tensor::from_i64({0}), scalar_f(0.5f)}).at(0);
  EXPECT_EQ(shape_str(out.shape()), "[0,3]");
  // The same boxes with room for both select both, highest score first.
  Tensor two = run_node("NonMaxSuppression", {boxes, scores, Tensor::from_i64({5}), scalar_f(0.5f)}).at(0);
  ASSERT_EQ(shape_str(two.shape()), "[2,3]");
  EXPECT_EQ(two.to_i64(), (std::vector<int64_t>{0, 0, 0, 0, 0, 1}));
}

TEST(RoiAlign, BoxOutsideTheImageGivesZeros) {
  std::vector<float> img(16);
  for (size_t i = 0; i < img.size(); ++i) img[i] = float(i + 1);
  Tensor X = Tensor::from_f32({1, 1, 4, 4}, img);
  // One roi far outside the 4x4 map, one straddling its right edge.
  Tensor rois = Tensor::from_f32({2, 4}, {10, 10, 12, 12, 3, 0, 8, 2});
  Tensor batch = Tensor::from_i64({0, 0});
  Tensor out = run_node("RoiAlign", {X, rois, batch}, 1,
                        {{"output_height", integer(2)}, {"output_width", integer(2)}, {"sampling_ratio", integer(2)}},
                        16)
                   .at(0);
  ASSERT_EQ(shape_str(out.shape()), "[2,1,2,2]");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out.data<float>()[i], 0.f) << i;
  for (int i = 4; i < 8; ++i) EXPECT_TRUE(std::isfinite(out.data<float>()[i])) << i;
}

TEST(QLinearConv, PerChannelScaleLengthMismatchNamesTheNode) {
  Tensor x = make<uint8_t>(DType::UInt8, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = make<uint8_t>(DType::UInt8, {2, 1, 1, 1}, {1, 2});
  Tensor zp = make<uint8_t>(DType::UInt8, {}, {0});
  Tensor w_scale = Tensor::from_f32({3}, {1, 1, 1});  // 3 scales for 2 output channels
  try {
    run_node("QLinearConv", {x, scalar_f(1), zp, w, w_scale, zp, scalar_f(1), zp}, 1, {}, 10);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'n'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("w_scale"), std::string::npos) << msg;
  }
  // With two scales it runs: channel m is x * (m + 1) scaled by its own scale.
  Tensor ok = run_node("QLinearConv", {x, scalar_f(1), zp, w, Tensor::from_f32({2}, {1, 0.5f}), zp, scalar_f(1), zp}, 1,
                       {}, 10)
                  .at(0);
  ASSERT_EQ(shape_str(ok.shape()), "[1,2,3,3]");
  EXPECT_EQ(ok.data<uint8_t>()[2], 3);       // 3 * 1 * 1
  EXPECT_EQ(ok.data<uint8_t>()[9 + 2], 3);   // 3 * 2 * 0.5
  EXPECT_EQ(ok.data<uint8_t>()[9 + 4], 5);   // 5 * 2 * 0.5
}

TEST(Unique, EmptyTensorGivesEmptyOutputs) {
  Tensor x(DType::Float32, {0});
  std::vector<Tensor> out = run_node("Unique", {x}, 4);
  ASSERT_EQ(out.size(), 4u);
  for (const Tensor& t : out) EXPECT_EQ(shape_str(t.shape()), "[0]");
  EXPECT_EQ(out[0].dtype(), DType::Float32);
  EXPECT_EQ(out[1].dtype(), DType::Int64);
}

TEST(DFT, AxisInputAtOpset20MatchesAttributeAtOpset17) {
  std::vector<float> v(2 * 6);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(float(i));
  Tensor x = Tensor::from_f32({2, 6, 1}, v);
  Tensor a = run_node("DFT", {x}, 1, {{"axis", integer(1)}}, 17).at(0);
  Tensor b = run_node("DFT", {x, Tensor(), Tensor::from_i64({-2})}, 1, {}, 20).at(0);
  ASSERT_EQ(shape_str(a.shape()), "[2,6,2]");
  ASSERT_EQ(shape_str(b.shape()), "[2,6,2]");
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5f);
  // DC term of the first signal is its sum.
  float sum = 0;
  for (int i = 0; i < 6; ++i) sum += v[size_t(i)];
  EXPECT_NEAR(a.data<float>()[0], sum, 1e-5f);
}

}  // namespace

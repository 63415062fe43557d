#include <gtest/gtest.h>

#include <cmath>

#include "ir_graphs.h"
#include "passes/passes.h"

using namespace kestrel;
using kestrel::test::make_node;
using kestrel::test::run_graph;

TEST(ConstantFolding, FoldsConstantChainsIntoInitializers) {
  ir::Graph g;
  ir::Node c = make_node(g, "Constant", {}, {"c"});
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Tensor;
  a.t = Tensor::from_f32({2}, {1.5f, -2.0f});
  c.attrs["value"] = a;
  g.nodes.push_back(c);
  g.nodes.push_back(make_node(g, "Identity", {"c"}, {"y"}));
  g.outputs.push_back(g.find("y"));
  EXPECT_EQ(passes::fold_constants(g), 2);
  EXPECT_TRUE(g.nodes.empty());
  ASSERT_TRUE(g.initializers.count(g.find("y")));
  EXPECT_EQ(g.initializers[g.find("y")].to_f32(), (std::vector<float>{1.5f, -2.0f}));
}

TEST(ConstantFolding, FoldsShapeOnlyWhenExact) {
  ir::Graph g;
  int fixed = g.add_value("fixed"), dynamic = g.add_value("dynamic");
  g.values[size_t(fixed)].shape = std::vector<ir::Dim>{{1, ""}, {3, ""}};
  g.values[size_t(dynamic)].shape = std::vector<ir::Dim>{{-1, "batch"}, {3, ""}};
  g.inputs = {fixed, dynamic};
  g.nodes.push_back(make_node(g, "Shape", {"fixed"}, {"s1"}));
  g.nodes.push_back(make_node(g, "Shape", {"dynamic"}, {"s2"}));
  g.outputs = {g.find("s1"), g.find("s2")};
  EXPECT_EQ(passes::fold_constants(g), 1);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].inputs[0], dynamic);
  EXPECT_EQ(g.initializers[g.find("s1")].to_i64(), (std::vector<int64_t>{1, 3}));
}

namespace {
// x [1,3,5,5] -> Conv(w [4,3,3,3], b [4], pad 1) -> act -> y, and optionally a
// second reader of the Conv output.
ir::Graph conv_then(const std::string& act, bool second_reader) {
  ir::Graph g;
  int x = g.add_value("x");
  g.values[size_t(x)].dtype = DType::Float32;
  g.inputs = {x};
  std::vector<float> w(4 * 3 * 3 * 3), b(4);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 7 % 11) - 5) / 4;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i) - 1.5f;
  g.initializers[g.add_value("w")] = Tensor::from_f32({4, 3, 3, 3}, w);
  g.initializers[g.add_value("b")] = Tensor::from_f32({4}, b);
  ir::Node conv = make_node(g, "Conv", {"x", "w", "b"}, {"c"});
  ir::Attribute pads;
  pads.kind = ir::Attribute::Kind::Ints;
  pads.ints = {1, 1, 1, 1};
  conv.attrs["pads"] = pads;
  g.nodes.push_back(conv);
  std::vector<std::string> act_in = {"c"};
  if (act == "Clip") {
    g.initializers[g.add_value("lo")] = Tensor::scalar_f32(-0.5f);
    g.initializers[g.add_value("hi")] = Tensor::scalar_f32(2.0f);
    act_in = {"c", "lo", "hi"};
  }
  if (act == "Relu6HardSwish") {  // Paddle2ONNX's four nodes: x * Clip(x + 3, 0, 6) / 6
    g.initializers[g.add_value("three")] = Tensor::scalar_f32(3.0f);
    g.initializers[g.add_value("zero")] = Tensor::scalar_f32(0.0f);
    g.initializers[g.add_value("six")] = Tensor::scalar_f32(6.0f);
    g.nodes.push_back(make_node(g, "Add", {"three", "c"}, {"a"}));
    g.nodes.push_back(make_node(g, "Clip", {"a", "zero", "six"}, {"cl"}));
    g.nodes.push_back(make_node(g, "Mul", {"c", "cl"}, {"m"}));
    g.nodes.push_back(make_node(g, "Div", {"m", "six"}, {"y"}));
  } else if (act == "Silu" || act == "MulHardSigmoid") {  // two nodes: x * gate(x), operands in either order
    g.nodes.push_back(make_node(g, act == "Silu" ? "Sigmoid" : "HardSigmoid", {"c"}, {"s"}));
    g.nodes.push_back(make_node(g, "Mul", act == "Silu" ? std::vector<std::string>{"c", "s"} : std::vector<std::string>{"s", "c"}, {"y"}));
  } else {
    g.nodes.push_back(make_node(g, act, act_in, {"y"}));
    if (act == "Gelu") g.nodes.back().opset = 20;
  }
  g.outputs = {g.find("y")};
  if (second_reader) {
    g.nodes.push_back(make_node(g, "Identity", {"c"}, {"c2"}));
    g.outputs.push_back(g.find("c2"));
  }
  return g;
}

}  // namespace

TEST(ActivationFusion, FusedConvMatchesUnfusedForEachActivation) {
  std::vector<float> xv(75);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(int(i * 13 % 17) - 8) / 3;
  Tensor x = Tensor::from_f32({1, 3, 5, 5}, xv);
  for (std::string act : {"Relu", "Clip", "LeakyRelu", "HardSigmoid", "Sigmoid", "HardSwish", "Gelu", "Silu",
                          "MulHardSigmoid", "Relu6HardSwish"}) {
    ir::Graph plain = conv_then(act, false), fused = conv_then(act, false);
    ASSERT_EQ(passes::fuse_activations(fused), 1) << act;
    ASSERT_EQ(fused.nodes.size(), 1u) << act;
    std::vector<float> want = run_graph(plain, x)[0].to_f32(), got = run_graph(fused, x)[0].to_f32();
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << act << " element " << i;
  }
}

// Sigmoid and Silu fused take the logistic the Sigmoid op computes
// (ops/logistic.h), so the fused Conv gives the very bits of the nodes it
// replaced: exp's logistic differs from it in the last bits. The four-node
// hard swish rounds where its Add, Mul and Div round.
TEST(ActivationFusion, FusedSigmoidAndSiluGiveTheUnfusedBits) {
  std::vector<float> xv(3 * 40 * 40);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(int(i * 7919 % 1013) - 506) / 37;
  Tensor x = Tensor::from_f32({1, 3, 40, 40}, xv);
  for (std::string act : {"Sigmoid", "Silu", "Relu6HardSwish"}) {
    ir::Graph plain = conv_then(act, false), fused = conv_then(act, false);
    ASSERT_EQ(passes::fuse_activations(fused), 1) << act;
    std::vector<float> want = run_graph(plain, x)[0].to_f32(), got = run_graph(fused, x)[0].to_f32();
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << act << " element " << i;
  }
}

TEST(ActivationFusion, LeavesConvWhoseOutputHasAnotherReader) {
  ir::Graph g = conv_then("Relu", true);
  EXPECT_EQ(passes::fuse_activations(g), 0);
  EXPECT_EQ(g.nodes.size(), 3u);
  ir::Graph gated = conv_then("Silu", true);  // x feeds Sigmoid, Mul and Identity
  EXPECT_EQ(passes::fuse_activations(gated), 0);
  EXPECT_EQ(gated.nodes.size(), 4u);
}

// The QDQ sessions' early fusion (passes/pipeline.cpp) takes only an
// activation that a QuantizeLinear alone reads after a Conv: one feeding a
// BatchNormalization stays a node, or fold_batchnorm would fold the
// normalization into a Conv that already carries the activation.
TEST(ActivationFusion, IntoQuantizersTakesOnlyActivationsAQuantizeLinearReads) {
  ir::Graph g;
  g.inputs = {g.add_value("x")};
  g.initializers[g.add_value("w")] = Tensor::from_f32({2, 2, 1, 1}, {1, 0, 0, 1});
  g.initializers[g.add_value("s")] = Tensor::scalar_f32(0.1f);
  for (const char* p : {"sc", "beta", "mean", "var"}) g.initializers[g.add_value(p)] = Tensor::from_f32({2}, {1, 1});
  g.nodes.push_back(make_node(g, "Conv", {"x", "w"}, {"c1"}));
  g.nodes.push_back(make_node(g, "Relu", {"c1"}, {"r1"}));
  g.nodes.push_back(make_node(g, "QuantizeLinear", {"r1", "s"}, {"q"}));
  g.nodes.push_back(make_node(g, "Conv", {"x", "w"}, {"c2"}));
  g.nodes.push_back(make_node(g, "Relu", {"c2"}, {"r2"}));
  g.nodes.push_back(make_node(g, "BatchNormalization", {"r2", "sc", "beta", "mean", "var"}, {"y"}));
  g.outputs = {g.find("q"), g.find("y")};
  EXPECT_EQ(passes::fuse_activations(g, /*only_into_quantizers=*/true), 1);
  ASSERT_EQ(g.nodes.size(), 5u);
  EXPECT_TRUE(g.nodes[0].has("kestrel.activation"));   // the Conv before the quantizer carries its Relu
  EXPECT_FALSE(g.nodes[2].has("kestrel.activation"));  // the other Conv does not
  EXPECT_EQ(g.nodes[3].op_type, "Relu");
}

namespace {
// Both graphs on one input x [1,3,5,5]: the same answer to float rounding
// (a folded scale rounds the weights, not the sums).
void expect_same_within_rounding(const ir::Graph& plain, const ir::Graph& folded) {
  std::vector<float> xv(75);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(int(i * 13 % 17) - 8) / 3;
  Tensor x = Tensor::from_f32({1, 3, 5, 5}, xv);
  std::vector<float> want = run_graph(plain, x)[0].to_f32(), got = run_graph(folded, x)[0].to_f32();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i]))) << i;
}
}  // namespace

// Conv -> Mul by a per-channel constant -> Add of one constant -> Relu:
// the Mul and Add go into the Conv's weights and bias, the Relu then into
// its epilogue; the result within float rounding of the nodes'.
TEST(ConvAffineFolding, PerChannelMulAndAddFoldIntoTheConv) {
  ir::Graph plain = conv_then("Relu", false);
  for (ir::Graph* g : {&plain}) {
    g->initializers[g->add_value("s")] = Tensor::from_f32({4, 1, 1}, {0.5f, -2.0f, 1.5f, 3.0f});
    g->initializers[g->add_value("t")] = Tensor::from_f32({1}, {0.25f});
    // c -> Mul(s) -> Add(t) -> the Relu, which read c.
    g->nodes.insert(g->nodes.begin() + 1, make_node(*g, "Mul", {"s", "c"}, {"cs"}));
    g->nodes.insert(g->nodes.begin() + 2, make_node(*g, "Add", {"cs", "t"}, {"ct"}));
    g->nodes[3].inputs[0] = g->find("ct");
  }
  ir::Graph folded = plain;
  ASSERT_EQ(passes::fold_conv_affine(folded), 1);
  ASSERT_EQ(folded.nodes.size(), 2u);  // Conv, Relu
  EXPECT_EQ(folded.nodes[1].inputs[0], folded.nodes[0].outputs[0]);
  EXPECT_EQ(passes::fuse_activations(folded), 1);
  expect_same_within_rounding(plain, folded);
  // A constant that is not per channel (it would broadcast the output up) stays a node.
  ir::Graph wide = conv_then("Relu", false);
  wide.initializers[wide.add_value("s")] = Tensor::from_f32({2, 4, 1, 1}, std::vector<float>(8, 2.0f));
  wide.nodes.insert(wide.nodes.begin() + 1, make_node(wide, "Mul", {"c", "s"}, {"cs"}));
  wide.nodes[2].inputs[0] = wide.find("cs");
  EXPECT_EQ(passes::fold_conv_affine(wide), 0);
}

// In a QDQ model the weights are DequantizeLinear(int8, scale): a Mul goes
// into that scale (one per tensor becoming one per channel), the int8 data
// unchanged, so the Conv can still become a QLinearConv.
TEST(ConvAffineFolding, AMulGoesIntoTheWeightsDequantizationScale) {
  ir::Graph plain;
  plain.inputs = {plain.add_value("x")};
  std::vector<int8_t> wq(4 * 3 * 3 * 3);
  for (size_t i = 0; i < wq.size(); ++i) wq[i] = int8_t(int(i * 37 % 255) - 127);
  Tensor wt(DType::Int8, {4, 3, 3, 3});
  std::copy(wq.begin(), wq.end(), wt.data<int8_t>());
  plain.initializers[plain.add_value("wq")] = wt;
  plain.initializers[plain.add_value("ws")] = Tensor::scalar_f32(0.01f);
  Tensor zero(DType::Int8, {});
  zero.data<int8_t>()[0] = 0;
  plain.initializers[plain.add_value("wz")] = zero;
  plain.initializers[plain.add_value("s")] = Tensor::from_f32({1, 4, 1, 1}, {0.5f, -2.0f, 1.5f, 3.0f});
  plain.initializers[plain.add_value("t")] = Tensor::from_f32({4, 1, 1}, {0.25f, 0.0f, -1.0f, 2.0f});
  plain.nodes.push_back(make_node(plain, "DequantizeLinear", {"wq", "ws", "wz"}, {"w"}));
  plain.nodes.push_back(make_node(plain, "Conv", {"x", "w"}, {"c"}));
  plain.nodes.push_back(make_node(plain, "Mul", {"c", "s"}, {"cs"}));
  plain.nodes.push_back(make_node(plain, "Add", {"cs", "t"}, {"y"}));
  plain.outputs = {plain.find("y")};
  ir::Graph folded = plain;
  ASSERT_EQ(passes::fold_conv_affine(folded), 1);
  ASSERT_EQ(folded.nodes.size(), 2u);  // DequantizeLinear, Conv
  const ir::Node& dq = folded.nodes[0];
  EXPECT_EQ(folded.initializers.at(dq.inputs[0]).data<int8_t>()[5], wq[5]);  // the int8 weights as they were
  EXPECT_EQ(folded.initializers.at(dq.inputs[1]).to_f32(), (std::vector<float>{0.005f, -0.02f, 0.015f, 0.03f}));
  EXPECT_EQ(folded.initializers.at(dq.inputs[2]).numel(), 4);  // its zero point per channel too
  EXPECT_EQ(dq.attr_i("axis", 1), 0);
  expect_same_within_rounding(plain, folded);
}

namespace {
// x [1,3,5,6] -> Pad(pads, mode, value) -> Conv(w [2,3,3,3], pads 1) -> y
ir::Graph pad_then_conv(const std::string& mode, float value) {
  ir::Graph g;
  int x = g.add_value("x");
  g.inputs = {x};
  std::vector<float> w(2 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 5 % 9) - 4) / 3;
  g.initializers[g.add_value("w")] = Tensor::from_f32({2, 3, 3, 3}, w);
  g.initializers[g.add_value("pads")] = Tensor::from_i64({0, 0, 2, 0, 0, 0, 1, 3});
  g.initializers[g.add_value("value")] = Tensor::scalar_f32(value);
  ir::Node pad = make_node(g, "Pad", {"x", "pads", "value"}, {"p"});
  ir::Attribute m;
  m.kind = ir::Attribute::Kind::String;
  m.s = mode;
  pad.attrs["mode"] = m;
  g.nodes.push_back(pad);
  ir::Node conv = make_node(g, "Conv", {"p", "w"}, {"y"});
  ir::Attribute pads;
  pads.kind = ir::Attribute::Kind::Ints;
  pads.ints = {1, 1, 1, 1};
  conv.attrs["pads"] = pads;
  g.nodes.push_back(conv);
  g.outputs = {g.find("y")};
  return g;
}
}  // namespace

TEST(PadFusion, ZeroPadFoldsIntoConvPadsWithSameResult) {
  std::vector<float> xv(90);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(int(i * 7 % 13) - 6) / 4;
  Tensor x = Tensor::from_f32({1, 3, 5, 6}, xv);
  ir::Graph plain = pad_then_conv("constant", 0.f), fused = pad_then_conv("constant", 0.f);
  ASSERT_EQ(passes::fuse_pads(fused), 1);
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0].attr_ints("pads"), (std::vector<int64_t>{3, 1, 2, 4}));
  Tensor want = run_graph(plain, x)[0], got = run_graph(fused, x)[0];
  ASSERT_EQ(want.shape(), got.shape());
  std::vector<float> a = want.to_f32(), b = got.to_f32();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-5f) << i;
}

TEST(PadFusion, LeavesNonZeroAndNonConstantPads) {
  ir::Graph nonzero = pad_then_conv("constant", 1.f), reflect = pad_then_conv("reflect", 0.f);
  EXPECT_EQ(passes::fuse_pads(nonzero), 0);
  EXPECT_EQ(passes::fuse_pads(reflect), 0);
}

namespace {
// x [1,4,5,5] -> Conv or ConvTranspose (group 2) [-> Add per-channel bias] ->
// BatchNormalization -> y, with large pre-normalization values (as in
// PP-OCR's detection head).
ir::Graph conv_then_bn(const std::string& op, bool add_bias) {
  ir::Graph g;
  int x = g.add_value("x");
  g.values[size_t(x)].dtype = DType::Float32;
  g.inputs = {x};
  const int64_t M = 6;
  Shape ws = op == "Conv" ? Shape{M, 2, 3, 3} : Shape{4, M / 2, 3, 3};
  std::vector<float> w(size_t(shape_numel(ws)));
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 7 % 13) - 6) * 300;
  g.initializers[g.add_value("w")] = Tensor::from_f32(ws, w);
  std::vector<float> sc, beta, mean, var, cb;
  for (int64_t m = 0; m < M; ++m) {
    sc.push_back(0.5f + float(m) / 4);
    beta.push_back(float(m) - 2);
    mean.push_back(float(m) * 100 - 250);
    var.push_back(1e6f * float(m + 1));
    cb.push_back(float(m) * 10 - 20);
  }
  g.initializers[g.add_value("sc")] = Tensor::from_f32({M}, sc);
  g.initializers[g.add_value("beta")] = Tensor::from_f32({M}, beta);
  g.initializers[g.add_value("mean")] = Tensor::from_f32({M}, mean);
  g.initializers[g.add_value("var")] = Tensor::from_f32({M}, var);
  g.initializers[g.add_value("cb")] = Tensor::from_f32({1, M, 1, 1}, cb);
  ir::Node conv = make_node(g, op, {"x", "w"}, {"c"});
  ir::Attribute group;
  group.i = 2;
  conv.attrs["group"] = group;
  g.nodes.push_back(conv);
  std::string bn_in = "c";
  if (add_bias) {
    g.nodes.push_back(make_node(g, "Add", {"cb", "c"}, {"cb_out"}));
    bn_in = "cb_out";
  }
  g.nodes.push_back(make_node(g, "BatchNormalization", {bn_in, "sc", "beta", "mean", "var"}, {"y"}));
  g.outputs = {g.find("y")};
  return g;
}
}  // namespace

TEST(BatchNormFolding, FoldsIntoConvAndConvTransposeWithTheSameResult) {
  std::vector<float> xv(100);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(int(i * 11 % 19) - 9) / 3;
  Tensor x = Tensor::from_f32({1, 4, 5, 5}, xv);
  for (std::string op : {"Conv", "ConvTranspose"})
    for (bool add_bias : {false, true}) {
      ir::Graph plain = conv_then_bn(op, add_bias), folded = conv_then_bn(op, add_bias);
      ASSERT_EQ(passes::fold_batchnorm(folded), 1) << op << " add " << add_bias;
      ASSERT_EQ(folded.nodes.size(), 1u);
      std::vector<float> want = run_graph(plain, x)[0].to_f32(), got = run_graph(folded, x)[0].to_f32();
      ASSERT_EQ(want.size(), got.size());
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-4f * (1 + std::abs(want[i]))) << op << " element " << i;
    }
}

TEST(BatchNormFolding, LeavesConvWhoseOutputHasAnotherReader) {
  ir::Graph g = conv_then_bn("Conv", false);
  g.nodes.push_back(make_node(g, "Identity", {"c"}, {"c2"}));
  g.outputs.push_back(g.find("c2"));
  EXPECT_EQ(passes::fold_batchnorm(g), 0);
  EXPECT_EQ(g.nodes.size(), 3u);
}

namespace {
// An If whose branches compute on a constant of the enclosing graph ("k")
// and, in the else branch, on a graph input ("x") too.
ir::Graph if_over_outer_constant() {
  ir::Graph g;
  int cond = g.add_value("cond"), x = g.add_value("x");
  g.inputs = {cond, x};
  ir::Node k = make_node(g, "Constant", {}, {"k"});
  ir::Attribute kv;
  kv.kind = ir::Attribute::Kind::Tensor;
  kv.t = Tensor::from_f32({3}, {1.f, -2.f, 3.f});
  k.attrs["value"] = kv;
  g.nodes.push_back(k);
  auto branch = [](const std::string& name, bool reads_x) {
    auto b = std::make_shared<ir::Graph>();
    b->name = name;
    b->outer_refs.push_back(b->add_value("k"));
    if (reads_x) b->outer_refs.push_back(b->add_value("x"));
    b->nodes.push_back(make_node(*b, "Mul", {"k", "k"}, {name + "_kk"}));
    b->nodes.push_back(make_node(*b, reads_x ? "Add" : "Neg", reads_x ? std::vector<std::string>{name + "_kk", "x"}
                                                                      : std::vector<std::string>{name + "_kk"},
                                 {name + "_out"}));
    b->outputs = {b->find(name + "_out")};
    return b;
  };
  ir::Node n = make_node(g, "If", {"cond"}, {"y"});
  ir::Attribute then_a, else_a;
  then_a.kind = else_a.kind = ir::Attribute::Kind::Graph;
  then_a.g = branch("then", false);
  else_a.g = branch("else", true);
  n.attrs["then_branch"] = then_a;
  n.attrs["else_branch"] = else_a;
  g.nodes.push_back(n);
  g.outputs = {g.find("y")};
  return g;
}
}  // namespace

TEST(ConstantFolding, FoldsWorkOnEnclosingConstantsInsideSubgraphs) {
  ir::Graph g = if_over_outer_constant();
  passes::run_default_passes(g);
  ASSERT_EQ(g.nodes.size(), 1u);  // the Constant folded; the If stays (its condition is an input)
  const ir::Graph& then_b = *g.nodes[0].attr("then_branch")->g;
  const ir::Graph& else_b = *g.nodes[0].attr("else_branch")->g;
  EXPECT_TRUE(then_b.nodes.empty());  // -(k*k) is a constant now
  EXPECT_TRUE(then_b.outer_refs.empty());
  ASSERT_EQ(else_b.nodes.size(), 1u);  // k*k folded; the Add reads the input x
  EXPECT_EQ(else_b.nodes[0].op_type, "Add");
  ASSERT_EQ(else_b.outer_refs.size(), 1u);
  EXPECT_EQ(else_b.values[size_t(else_b.outer_refs[0])].name, "x");

  auto compiled = backends::make_cpu_backend()->compile(g);
  backends::RunOptions opts;
  opts.threads = 1;
  Tensor yes(DType::Bool, {}), no(DType::Bool, {});
  *yes.data<bool>() = true;
  *no.data<bool>() = false;
  Tensor x = Tensor::from_f32({3}, {10.f, 20.f, 30.f});
  EXPECT_EQ(compiled->run({yes, x}, opts)[0].to_f32(), (std::vector<float>{-1.f, -4.f, -9.f}));
  EXPECT_EQ(compiled->run({no, x}, opts)[0].to_f32(), (std::vector<float>{11.f, 24.f, 39.f}));
}

namespace {
// ONNX Runtime's MatMulAddFusion of a linear layer on x [1, 6, 4]: Reshape to
// [6, 4] -> Gemm (W [4, 3] or its transpose, bias [3]) -> Reshape to `after`.
ir::Graph flattened_linear(bool trans_b, std::vector<int64_t> after, bool x_shape_known) {
  ir::Graph g;
  const int x = g.add_value("x");
  g.inputs.push_back(x);
  g.values[size_t(x)].dtype = DType::Float32;
  if (x_shape_known) g.values[size_t(x)].shape = std::vector<ir::Dim>{{1, ""}, {6, ""}, {4, ""}};
  std::vector<float> w(12), b = {0.5f, -1.f, 2.f};
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 5 % 7) - 3) / 2;
  g.initializers[g.add_value("w")] = Tensor::from_f32(trans_b ? Shape{3, 4} : Shape{4, 3}, w);
  g.initializers[g.add_value("b")] = Tensor::from_f32({3}, b);
  g.initializers[g.add_value("flat")] = Tensor::from_i64({6, 4});
  g.initializers[g.add_value("back")] = Tensor::from_i64(after);
  g.nodes.push_back(make_node(g, "Reshape", {"x", "flat"}, {"a"}));
  ir::Node gemm = make_node(g, "Gemm", {"a", "w", "b"}, {"y2"});
  ir::Attribute t;
  t.i = trans_b ? 1 : 0;
  gemm.attrs["transB"] = t;
  g.nodes.push_back(gemm);
  g.nodes.push_back(make_node(g, "Reshape", {"y2", "back"}, {"y"}));
  g.outputs = {g.find("y")};
  return g;
}
}  // namespace

TEST(GemmUnflattening, RestoresMatMulAndAddWithTheSameResult) {
  std::vector<float> xv(24);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(int(i * 11 % 13) - 6) / 4;
  const Tensor x = Tensor::from_f32({1, 6, 4}, xv);
  struct Case {
    bool trans_b;
    std::vector<int64_t> after;
    bool x_known;
    std::vector<std::string> ops;  // after the pass
  };
  for (const Case& c : std::vector<Case>{
           {false, {1, 6, 3}, true, {"MatMul", "Add"}},             // the layer as exported
           {true, {1, 6, 3}, true, {"MatMul", "Add"}},              // transposed weight
           {false, {1, 6, 3, 1}, true, {"MatMul", "Add", "Reshape"}},  // merged with a following Reshape
           {false, {1, 6, 3}, false, {"Reshape", "MatMul", "Add"}},  // x's shape unknown: reshaped to [1, 6, 4]
       }) {
    ir::Graph plain = flattened_linear(c.trans_b, c.after, c.x_known), restored = plain;
    ASSERT_EQ(passes::unflatten_gemms(restored), 1);
    std::vector<std::string> ops;
    for (const ir::Node& n : restored.nodes) ops.push_back(n.op_type);
    EXPECT_EQ(ops, c.ops);
    const Tensor want = run_graph(plain, x)[0], got = run_graph(restored, x)[0];
    EXPECT_EQ(got.shape(), want.shape());
    const std::vector<float> w = want.to_f32(), r = got.to_f32();
    for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(r[i], w[i], 1e-6f) << "element " << i;
  }
}

TEST(GemmUnflattening, LeavesAGemmWhoseFlatOutputIsReadElsewhere) {
  ir::Graph g = flattened_linear(false, {1, 6, 3}, true);
  g.nodes.push_back(make_node(g, "Identity", {"y2"}, {"flat_copy"}));
  g.outputs.push_back(g.find("flat_copy"));
  EXPECT_EQ(passes::unflatten_gemms(g), 0);
}

namespace {
// YOLOv5's Focus: x [1,2,H,W] -> four (row, column) phases of step 2 -> Concat
// on channels -> Conv 3x3 (pad 1, bias) -> y. Phases in the order (0,0),
// (1,0), (0,1), (1,1) as the exporters write them; the first two as chained
// Slices (rows, then columns), the others as one Slice of both axes.
struct FocusCase {
  int64_t H = 6, W = 8;
  int64_t step = 2;
  bool second_reader = false;  // a phase also returned by the graph
  int64_t stride = 1;
};

ir::Graph focus_then_conv(const FocusCase& f) {
  ir::Graph g;
  int x = g.add_value("x");
  g.values[size_t(x)].dtype = DType::Float32;
  g.values[size_t(x)].shape = std::vector<ir::Dim>{{1, ""}, {2, ""}, {f.H, ""}, {f.W, ""}};
  g.inputs = {x};
  auto i64 = [&](const std::string& name, std::vector<int64_t> v) {
    g.initializers[g.add_value(name)] = Tensor::from_i64(v);
  };
  i64("zero", {0});
  i64("one", {1});
  i64("end", {INT64_MAX});
  i64("ax2", {2});
  i64("ax3", {3});
  i64("step", {f.step});
  i64("zero2", {0, 0});
  i64("one_zero", {0, 1});  // (row 0, column 1)
  i64("one_one", {1, 1});
  i64("end2", {INT64_MAX, INT64_MAX});
  i64("ax23", {2, 3});
  i64("step2", {f.step, f.step});
  // (0,0) and (1,0): rows first, then columns, each Slice's output sized.
  for (auto [name, row] : {std::pair<std::string, std::string>{"p00", "zero"}, {"p10", "one"}}) {
    const int r = g.add_value(name + "_rows");
    g.values[size_t(r)].shape = std::vector<ir::Dim>{{1, ""}, {2, ""}, {(f.H + 1) / 2, ""}, {f.W, ""}};
    g.nodes.push_back(make_node(g, "Slice", {"x", row, "end", "ax2", "step"}, {name + "_rows"}));
    g.nodes.push_back(make_node(g, "Slice", {name + "_rows", "zero", "end", "ax3", "step"}, {name}));
  }
  g.nodes.push_back(make_node(g, "Slice", {"x", "one_zero", "end2", "ax23", "step2"}, {"p01"}));
  g.nodes.push_back(make_node(g, "Slice", {"x", "one_one", "end2", "ax23", "step2"}, {"p11"}));
  ir::Node cat = make_node(g, "Concat", {"p00", "p10", "p01", "p11"}, {"f"});
  ir::set_attr(cat, "axis", int64_t(1));
  g.nodes.push_back(cat);
  std::vector<float> w(3 * 8 * 3 * 3), b(3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 7 % 17) - 8) / 8;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i) - 0.5f;
  g.initializers[g.add_value("w")] = Tensor::from_f32({3, 8, 3, 3}, w);
  g.initializers[g.add_value("b")] = Tensor::from_f32({3}, b);
  ir::Node conv = make_node(g, "Conv", {"f", "w", "b"}, {"y"});
  ir::set_attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  if (f.stride != 1) ir::set_attr(conv, "strides", std::vector<int64_t>{f.stride, f.stride});
  g.nodes.push_back(conv);
  g.outputs = {g.find("y")};
  if (f.second_reader) g.outputs.push_back(g.find("p01"));
  return g;
}
}  // namespace

TEST(SpaceToDepthFold, FocusBecomesOneStrideTwoConvWithTheSameResult) {
  std::vector<float> xv(2 * 6 * 8);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(int(i * 5 % 23) - 11) / 7;
  const Tensor x = Tensor::from_f32({1, 2, 6, 8}, xv);
  ir::Graph plain = focus_then_conv({}), folded = focus_then_conv({});
  ASSERT_EQ(passes::fold_space_to_depth(folded), 1);
  ASSERT_EQ(folded.nodes.size(), 1u);
  const ir::Node& conv = folded.nodes[0];
  EXPECT_EQ(conv.inputs[0], folded.find("x"));
  EXPECT_EQ(conv.attr_ints("kernel_shape"), (std::vector<int64_t>{6, 6}));
  EXPECT_EQ(conv.attr_ints("strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(conv.attr_ints("pads"), (std::vector<int64_t>{2, 2, 2, 2}));
  const Tensor want = run_graph(plain, x)[0], got = run_graph(folded, x)[0];
  ASSERT_EQ(want.shape(), (Shape{1, 3, 3, 4}));
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<float> a = want.to_f32(), b = got.to_f32();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-5f) << i;  // sums in another order
}

TEST(SpaceToDepthFold, LeavesWhatIsNotAFocusOfEvenSize) {
  FocusCase odd;  // phases of unequal height: the model's Concat must still fail
  odd.H = 7;
  FocusCase step3;
  step3.step = 3;
  FocusCase shared;  // a phase the graph also returns
  shared.second_reader = true;
  FocusCase strided;  // a stride-2 Conv after it: not one Conv of the image
  strided.stride = 2;
  for (const FocusCase& f : {odd, step3, shared, strided}) {
    ir::Graph g = focus_then_conv(f);
    const size_t nodes = g.nodes.size();
    EXPECT_EQ(passes::fold_space_to_depth(g), 0) << f.H << " " << f.step << " " << f.second_reader << " " << f.stride;
    EXPECT_EQ(g.nodes.size(), nodes);
  }
}

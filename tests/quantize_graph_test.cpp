// Which values `kestrel quantize` quantizes (src/quantize/qdq_graph.h): a
// Conv's output after the activation that alone reads it, read dequantized
// by every reader; not a model output, and not a value that a Conv left in
// float reads.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>

#include "onnx_builders.h"
#include "quantize/qdq_graph.h"

namespace kestrel::quantize {
namespace {

using namespace kestrel::test;

// x -> Conv c1 -> Relu -> r; r -> Conv c2 -> y (an output); r -> Sigmoid ->
// s (an output); x -> Conv c3 -> Sigmoid and Mul (SiLU) -> m -> Add(m, m) ->
// t (an output).
onnx::ModelProto model() {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 2, 4, 4});
  for (const char* w : {"w1", "w2", "w3"}) add_float_initializer(g, w, {2, 2, 1, 1}, 0.5f);
  add_node(g, "Conv", {"x", "w1"}, {"c1"}, "conv1");
  add_node(g, "Relu", {"c1"}, {"r"}, "relu");
  add_node(g, "Conv", {"r", "w2"}, {"y"}, "conv2");
  add_node(g, "Sigmoid", {"r"}, {"s"}, "sig");
  add_node(g, "Conv", {"x", "w3"}, {"c3"}, "conv3");
  add_node(g, "Sigmoid", {"c3"}, {"g3"}, "gate");
  add_node(g, "Mul", {"c3", "g3"}, {"m"}, "silu");
  add_node(g, "Add", {"m", "m"}, {"t"}, "add");
  for (const char* o : {"y", "s", "t"}) add_output(g, o);
  return m;
}

std::map<std::string, Range> ranges() {
  return {{"x", {-1, 1}}, {"r", {0, 2}}, {"m", {-0.3f, 3}}};
}

// The values the QDQ model quantizes, and what each named node reads first.
struct Written {
  std::set<std::string> quantized;
  std::map<std::string, std::string> input0;
};
Written written(const std::string& bytes) {
  onnx::ModelProto q;
  EXPECT_TRUE(q.ParseFromString(bytes));
  Written w;
  for (const auto& n : q.graph().node()) {
    if (n.op_type() == "QuantizeLinear") w.quantized.insert(n.input(0));
    if (!n.name().empty() && n.input_size() > 0) w.input0[n.name()] = n.input(0);
  }
  return w;
}

TEST(QdqGraph, ConvOutputsAreQuantizedAfterTheirActivation) {
  const onnx::ModelProto m = model();
  const std::vector<QuantTarget> targets = find_targets(m, nullptr);
  ASSERT_EQ(targets.size(), 3u);
  EXPECT_EQ(targets[0].output, "r");  // after the Relu
  EXPECT_EQ(targets[1].output, "");   // y is a model output
  EXPECT_EQ(targets[2].output, "m");  // after x * Sigmoid(x)
  const Written w = written(qdq_model(m, targets, {}, ranges(), true));
  EXPECT_EQ(w.quantized, (std::set<std::string>{"x", "r", "m"}));
  // Every reader of a quantized output takes it dequantized.
  EXPECT_EQ(w.input0.at("conv2"), "r_dequantized");
  EXPECT_EQ(w.input0.at("sig"), "r_dequantized");
  EXPECT_EQ(w.input0.at("add"), "m_dequantized");
}

TEST(QdqGraph, AValueAConvLeftInFloatReadsStaysFloat) {
  const onnx::ModelProto m = model();
  std::vector<QuantTarget> targets = find_targets(m, nullptr);
  ASSERT_EQ(targets.size(), 3u);
  targets.erase(targets.begin() + 1);  // conv2 left in float
  const Written w = written(qdq_model(m, targets, {}, ranges(), true));
  EXPECT_EQ(w.quantized, (std::set<std::string>{"x", "m"}));
  EXPECT_EQ(w.input0.at("conv2"), "r");
  EXPECT_EQ(w.input0.at("sig"), "r");
}

// A residual block: r = Relu(Conv(x) + x) read by a Conv and by the next
// Add, whose sum is the model's output. The first sum (after its Relu) is
// quantized for both readers; the output is not.
TEST(QdqGraph, ResidualSumsAreQuantizedPastTheirActivation) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 2, 4, 4});
  for (const char* w : {"w1", "w2"}) add_float_initializer(g, w, {2, 2, 1, 1}, 0.5f);
  add_node(g, "Conv", {"x", "w1"}, {"c1"}, "conv1");
  add_node(g, "Add", {"c1", "x"}, {"s1"}, "add1");
  add_node(g, "Relu", {"s1"}, {"r"}, "relu");
  add_node(g, "Conv", {"r", "w2"}, {"c2"}, "conv2");
  add_node(g, "Add", {"c2", "r"}, {"y"}, "add2");
  add_output(g, "y");
  EXPECT_EQ(find_residual_sums(m), (std::vector<std::string>{"r"}));
  const std::vector<QuantTarget> targets = find_targets(m, nullptr);
  ASSERT_EQ(targets.size(), 2u);
  const std::map<std::string, Range> r = {{"x", {-1, 1}}, {"c1", {-1, 1}}, {"r", {0, 2}}, {"c2", {-1, 2}}};
  const Written w = written(qdq_model(m, targets, find_residual_sums(m), r, true));
  EXPECT_EQ(w.quantized, (std::set<std::string>{"x", "c1", "r", "c2"}));
  EXPECT_EQ(w.input0.at("conv2"), "r_dequantized");
  EXPECT_EQ(w.input0.at("add2"), "c2_dequantized");
}

}  // namespace
}  // namespace kestrel::quantize

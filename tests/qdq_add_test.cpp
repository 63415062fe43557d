// The QDQ addition fused (passes/fuse_qdq_add.cpp, ops/qdq_add.cpp):
// DequantizeLinear, DequantizeLinear -> Add -> Relu -> QuantizeLinear gives
// the very bits of those five nodes as one com.kestrel QdqAdd, and inputs it
// cannot take are refused naming what is wrong.
#include <gtest/gtest.h>

#include "core/error.h"
#include "ir_graphs.h"
#include "passes/passes.h"

using namespace kestrel;
using kestrel::test::make_node;
using kestrel::test::run_graph;

namespace {

Tensor bytes(const Shape& shape, int seed) {
  Tensor t(DType::UInt8, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = uint8_t((i * 73 + seed * 31) % 256);
  return t;
}

Tensor zero_point(uint8_t z) {
  Tensor t(DType::UInt8, {});
  t.data<uint8_t>()[0] = z;
  return t;
}

// a [1,4,6,6] (uint8 input) + b (a uint8 constant), each dequantized, then
// Relu and a quantizer; shapes declared as the loader's inference gives them.
ir::Graph residual(const Shape& b_shape) {
  ir::Graph g;
  g.inputs = {g.add_value("a")};
  g.initializers[g.add_value("b")] = bytes(b_shape, 1);
  g.initializers[g.add_value("sa")] = Tensor::scalar_f32(0.0371f);
  g.initializers[g.add_value("za")] = zero_point(121);
  g.initializers[g.add_value("sb")] = Tensor::scalar_f32(0.0219f);
  g.initializers[g.add_value("zb")] = zero_point(7);
  g.initializers[g.add_value("sy")] = Tensor::scalar_f32(0.0413f);
  g.initializers[g.add_value("zy")] = zero_point(0);
  g.nodes.push_back(make_node(g, "DequantizeLinear", {"a", "sa", "za"}, {"fa"}));
  g.nodes.push_back(make_node(g, "DequantizeLinear", {"b", "sb", "zb"}, {"fb"}));
  g.nodes.push_back(make_node(g, "Add", {"fa", "fb"}, {"s"}));
  g.nodes.push_back(make_node(g, "Relu", {"s"}, {"r"}));
  g.nodes.push_back(make_node(g, "QuantizeLinear", {"r", "sy", "zy"}, {"y"}));
  const auto dims = [](const Shape& s) {
    std::vector<ir::Dim> d;
    for (int64_t v : s) d.push_back({v, ""});
    return d;
  };
  g.values[size_t(g.find("fa"))].shape = dims({1, 4, 6, 6});
  g.values[size_t(g.find("fb"))].shape = dims(b_shape);
  g.outputs = {g.find("y")};
  return g;
}

}  // namespace

TEST(QdqAdd, GivesTheBitsOfTheNodesItReplaces) {
  const ir::Graph plain = residual({1, 4, 6, 6});
  ir::Graph fused = plain;
  ASSERT_EQ(passes::fuse_qdq_adds(fused), 1);
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0].op_type, "QdqAdd");
  const Tensor a = bytes({1, 4, 6, 6}, 2);
  const Tensor want = run_graph(plain, a)[0], got = run_graph(fused, a)[0];
  ASSERT_EQ(got.dtype(), DType::UInt8);
  ASSERT_EQ(got.shape(), want.shape());
  int zeros = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    ASSERT_EQ(got.data<uint8_t>()[i], want.data<uint8_t>()[i]) << i;
    zeros += got.data<uint8_t>()[i] == 0;
  }
  EXPECT_GT(zeros, 0);  // the Relu took effect somewhere
}

TEST(QdqAdd, AnAddThatBroadcastsStaysAsItIs) {
  ir::Graph g = residual({1, 4, 1, 1});
  EXPECT_EQ(passes::fuse_qdq_adds(g), 0);
  EXPECT_EQ(g.nodes.size(), 5u);
}

TEST(QdqAdd, InputsOfTwoShapesAreRefusedNamingThem) {
  ir::Graph g = residual({1, 4, 6, 6});
  ASSERT_EQ(passes::fuse_qdq_adds(g), 1);
  g.initializers[g.find("b")] = bytes({1, 4, 6, 5}, 1);  // a node written by hand with mismatched inputs
  try {
    run_graph(g, bytes({1, 4, 6, 6}, 2));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[1,4,6,6] and b [1,4,6,5]"), std::string::npos) << e.what();
  }
}

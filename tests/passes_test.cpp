#include <gtest/gtest.h>

#include "passes/passes.h"

using namespace kestrel;

namespace {
ir::Node make_node(ir::Graph& g, const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
  ir::Node n;
  n.op_type = op;
  n.name = op + "_" + std::to_string(g.nodes.size());
  n.opset = 17;
  for (auto& s : in) n.inputs.push_back(g.add_value(s));
  for (auto& s : out) n.outputs.push_back(g.add_value(s));
  return n;
}
}  // namespace

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

// Scalars computed from shapes (families/graph_index.h shape_derived_scalar):
// torch's scaled_dot_product_attention writes its scale as
// 1/sqrt(q.shape[-1]) in nodes; a scale that reads any other dimension is
// not a constant of the layer and must not be read as one.
#include <gtest/gtest.h>

#include "families/graph_index.h"

using namespace kestrel;

namespace {

// q -> Shape -> Gather(index) -> Cast(float) -> Sqrt -> Div(1, .) ; returns the Div's output.
int scale_from_dim(ir::Graph& g, int64_t index) {
  const int q = g.add_value("q");
  g.inputs.push_back(q);
  auto node = [&](const char* op, std::vector<int> in, const std::string& out) {
    ir::Node n;
    n.name = out;
    n.op_type = op;
    n.opset = 17;
    n.inputs = std::move(in);
    n.outputs = {g.add_value(out)};
    g.nodes.push_back(n);
    return n.outputs[0];
  };
  auto constant = [&](const std::string& name, Tensor t) {
    const int v = g.add_value(name);
    g.initializers[v] = std::move(t);
    return v;
  };
  const int shape = node("Shape", {q}, "shape");
  const int dim = node("Gather", {shape, constant("index", Tensor::scalar_i64(index))}, "dim");
  const int as_float = node("Cast", {dim}, "as_float");
  g.nodes.back().attrs["to"].kind = ir::Attribute::Kind::Int;
  g.nodes.back().attrs["to"].i = 1;  // FLOAT
  const int root = node("Sqrt", {as_float}, "root");
  return node("Div", {constant("one", Tensor::from_f32({}, {1.f})), root}, "scale");
}

}  // namespace

TEST(ShapeDerivedScalar, TheLastDimensionGivesTheHeadSizesScale) {
  for (int64_t index : {3, -1}) {
    ir::Graph g;
    const int v = scale_from_dim(g, index);
    families::GraphIndex gi(g);
    std::optional<double> s = families::shape_derived_scalar(gi, v, 64);
    ASSERT_TRUE(s.has_value()) << index;
    EXPECT_DOUBLE_EQ(*s, 0.125) << index;
  }
}

TEST(ShapeDerivedScalar, AnotherDimensionIsNotAConstant) {
  ir::Graph g;
  const int v = scale_from_dim(g, 1);  // the head count or the tokens: varies
  families::GraphIndex gi(g);
  EXPECT_FALSE(families::shape_derived_scalar(gi, v, 64).has_value());
}

TEST(ShapeDerivedScalar, AValueThatReadsDataIsNotAConstant) {
  ir::Graph g;
  const int v = scale_from_dim(g, -1);
  // The Sqrt now reads the graph input's data instead of its shape.
  for (ir::Node& n : g.nodes)
    if (n.op_type == "Sqrt") n.inputs[0] = g.inputs[0];
  families::GraphIndex gi(g);
  EXPECT_FALSE(families::shape_derived_scalar(gi, v, 64).has_value());
}

// torch's nn.TransformerEncoderLayer(norm_first=True) stack after ModernBERT
// (tests/models/modernbert_stack): near misses of its signature are left
// op by op while ModernBERT is still claimed. (Its claim and faithfulness
// on both backends are in families_test.cpp.)
#include <gtest/gtest.h>

#include "families/families.h"
#include "onnx/loader.h"
#include "passes/passes.h"
#include "graph_helpers.h"

using namespace kestrel;
using kestrel::test::node_named;

namespace {

ir::Graph stack_graph() {
  ir::Graph g = onnx_io::load_model_file(std::string(KESTREL_SOURCE_DIR) + "/tests/models/modernbert_stack/torchscript.onnx").graph;
  passes::run_default_passes(g);
  return g;
}

std::vector<std::string> families_of(const families::ClaimReport& r) {
  std::vector<std::string> f;
  for (const auto& c : r.claims) f.push_back(c.family);
  return f;
}

}  // namespace

TEST(TorchStack, BothStacksAreClaimed) {
  ir::Graph g = stack_graph();
  EXPECT_EQ(families_of(families::claim_families(g)), (std::vector<std::string>{"modernbert", "torch_transformer"}));
}

// Where(mask == 0, 0, 0): an additive term that masks nothing is no key padding mask.
TEST(TorchStack, AnAdditiveTermThatIsNotAKeyPaddingMaskIsNotClaimed) {
  ir::Graph g = stack_graph();
  ir::Node* where = node_named(g, "/stack/Where");
  ASSERT_TRUE(where);
  const int zero = g.add_value("zero");
  g.values[size_t(zero)].dtype = DType::Float32;
  g.initializers[zero] = Tensor::from_f32({}, {0.f});
  where->inputs[1] = zero;
  EXPECT_EQ(families_of(families::claim_families(g)), (std::vector<std::string>{"modernbert"}));
}

// The keys of layer 1 split into 2 heads of 32 while its queries use 4 of 16.
TEST(TorchStack, ADifferentHeadCountForTheKeysIsNotClaimed) {
  ir::Graph g = stack_graph();
  ir::Node* concat = nullptr;
  for (ir::Node& n : g.nodes)
    if (n.name == "/stack/layers.1/self_attn/Concat_9") concat = &n;  // the key's [batch, heads, tokens, head_dim]
  ASSERT_TRUE(concat);
  ASSERT_EQ(concat->inputs.size(), 4u);
  const Tensor* heads = &g.initializers.at(concat->inputs[1]);
  ASSERT_EQ(heads->to_i64(), std::vector<int64_t>{4});
  const int two = g.add_value("two_heads");
  g.values[size_t(two)].dtype = DType::Int64;
  g.initializers[two] = Tensor::from_i64({2});
  concat->inputs[1] = two;
  families::ClaimReport r = families::claim_families(g);
  // Layer 0 is still a whole torch layer: it alone is claimed; layer 1 stays op by op.
  ASSERT_EQ(families_of(r), (std::vector<std::string>{"modernbert", "torch_transformer"}));
  EXPECT_EQ(r.claims[1].layers, 1);
  EXPECT_TRUE(node_named(g, "/stack/layers.1/self_attn/MatMul_1"));
}

// Layer 0's attention residual dropped: layer 0 stays op by op (layer 1,
// still whole, may be claimed alone).
TEST(TorchStack, AMissingResidualLeavesThatLayerOut) {
  ir::Graph g = stack_graph();
  ir::Node* add = node_named(g, "/stack/layers.0/Add");
  ASSERT_TRUE(add);
  add->inputs[0] = add->inputs[1];
  families::ClaimReport r = families::claim_families(g);
  for (const auto& c : r.claims)
    if (c.family == "torch_transformer") EXPECT_EQ(c.layers, 1);
  EXPECT_TRUE(node_named(g, "/stack/layers.0/Add"));
  EXPECT_TRUE(node_named(g, "/stack/layers.0/self_attn/MatMul_1"));
}

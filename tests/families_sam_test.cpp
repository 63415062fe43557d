// SAM's ViT-Det family: near misses of its layer signature are left alone,
// renamed exports still match, and a fused node whose relative-position
// tables do not fit the input's grid is withdrawn with the output still
// right. (The fixture's claim and faithfulness are in families_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>

#include "core/compare.h"
#include "core/npy.h"
#include "backends/backend.h"
#include "families/families.h"
#include "onnx/loader.h"
#include "passes/passes.h"
#include "graph_helpers.h"

using namespace kestrel;
using kestrel::test::node_named;

namespace {

std::string sam_fixture(const std::string& file) { return std::string(KESTREL_SOURCE_DIR) + "/tests/models/sam/" + file; }

ir::Graph sam_graph() {
  ir::Graph g = onnx_io::load_model_file(sam_fixture("torchscript.onnx")).graph;
  passes::run_default_passes(g);
  return g;
}

const std::string kAttn0 = "/vision_encoder/layers.0/attn/";

bool mentions(const families::ClaimReport& r, const std::string& what) {
  for (const families::Unclaimed& u : r.unclaimed)
    if (u.text().find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(SamFamily, TheFixtureBecomesOneFusedNode) {
  ir::Graph g = sam_graph();
  families::ClaimReport r = families::claim_families(g);
  ASSERT_EQ(r.claims.size(), 1u);
  EXPECT_EQ(r.claims[0].family, "sam");
  EXPECT_EQ(r.claims[0].layers, 4);
  int fused = 0;
  for (const ir::Node& n : g.nodes) fused += n.op_type == "ViTDetEncoder";
  EXPECT_EQ(fused, 1);
}

TEST(SamFamily, RenamedTensorsAndNodesStillMatch) {
  ir::Graph g = sam_graph();
  kestrel::test::rename_everything(g);
  families::ClaimReport r = families::claim_families(g);
  ASSERT_EQ(r.claims.size(), 1u);
  EXPECT_EQ(r.claims[0].family, "sam");
  EXPECT_EQ(r.claims[0].layers, 4);
}

// Both relative-position terms along the width: not SAM's decomposed bias.
TEST(SamFamily, TwoRelativePositionTermsAlongOneAxisAreNotClaimed) {
  ir::Graph g = sam_graph();
  ir::Node* e = node_named(g, kAttn0 + "Einsum");
  ASSERT_TRUE(e);
  ASSERT_EQ(e->attr_s("equation", ""), "bhwc,hkc->bhwk");
  e->attrs["equation"].s = "bhwc,wkc->bhwk";
  families::ClaimReport r = families::claim_families(g);
  EXPECT_TRUE(r.claims.empty());  // layers 1-3 alone have no patch embedding before them
  EXPECT_TRUE(mentions(r, "relative-position terms are not one per axis"));
}

// An Einsum that is no relative-position term at all (it contracts another axis).
TEST(SamFamily, AnotherEinsumIsNotClaimed) {
  ir::Graph g = sam_graph();
  ir::Node* e = node_named(g, kAttn0 + "Einsum_1");
  ASSERT_TRUE(e);
  e->attrs["equation"].s = "bhwc,wkc->bhkc";
  families::ClaimReport r = families::claim_families(g);
  EXPECT_TRUE(r.claims.empty());
  EXPECT_TRUE(mentions(r, "not a relative-position term"));
}

// Scores reach the Softmax without the bias: plain attention over a fused
// QKV, which no family takes.
TEST(SamFamily, AttentionWithoutTheRelativePositionBiasIsNotClaimed) {
  ir::Graph g = sam_graph();
  ir::Node* softmax = node_named(g, kAttn0 + "Softmax");
  ir::Node* scores = node_named(g, kAttn0 + "MatMul");
  ASSERT_TRUE(softmax && scores);
  softmax->inputs[0] = scores->outputs[0];
  families::ClaimReport r = families::claim_families(g);
  EXPECT_TRUE(r.claims.empty());
  EXPECT_TRUE(mentions(r, "no decomposed relative-position bias"));
}

TEST(SamFamily, AMissingResidualIsNotClaimed) {
  ir::Graph g = sam_graph();
  ir::Node* add = node_named(g, "/vision_encoder/layers.0/Add_2");  // x + attention
  ASSERT_TRUE(add);
  add->inputs[0] = add->inputs[1];
  families::ClaimReport r = families::claim_families(g);
  EXPECT_TRUE(r.claims.empty());
}

// A global layer's tables span the grid it was exported for; a fused node
// whose tables do not fit the grid (what a misread would carry) makes the
// kernel refuse: the first-run check takes that as a disagreement,
// withdraws the claim, and the graph's own ops give the right output.
TEST(SamFamily, TablesThatDoNotSpanTheGridWithdrawTheClaim) {
  ir::Graph g = sam_graph();
  families::ClaimReport r = families::claim_families(g);
  ASSERT_EQ(r.claims.size(), 1u);
  ir::Node* fused = node_named(g, r.claims[0].node);
  ASSERT_TRUE(fused);
  const int64_t id = fused->attr_i("claim_id", 0);
  // Layer 1 (global over 8x8 patches): a height table of 13 rows, not 15.
  // Its own copy: the original subgraph keeps the real one.
  const Tensor& t = g.initializers.at(fused->inputs[size_t(1 + 1 * 18 + 16)]);
  ASSERT_EQ(t.dim(0), 15);
  std::vector<float> v = t.to_f32();
  v.resize(size_t(13 * t.dim(1)));
  const int shrunk = g.add_value("shrunk_table");
  g.values[size_t(shrunk)].dtype = DType::Float32;
  g.initializers[shrunk] = Tensor::from_f32({13, t.dim(1)}, v);
  fused->inputs[size_t(1 + 1 * 18 + 16)] = shrunk;
  auto compiled = backends::make_cpu_backend()->compile(g);
  backends::RunOptions opts;
  opts.threads = 2;
  testing::internal::CaptureStderr();
  std::vector<Tensor> out = compiled->run({read_npy(sam_fixture("input_0.npy"))}, opts);
  std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(compiled->fused_checks().withdrawn(id));
  EXPECT_NE(warning.find("withdrew the sam encoder claim"), std::string::npos) << warning;
  EXPECT_NE(warning.find("do not span"), std::string::npos) << warning;
  Agreement a = agreement(out[0], read_npy(sam_fixture("torchscript_output_0.npy")));
  EXPECT_GE(a.cosine, 0.99999);
  EXPECT_LE(a.max_rel, 1e-4);
}

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

// What ONNX Runtime's constant folding leaves of layer 0's height term:
// the table already gathered by position, [S, S, head_dim] with entry (q, k)
// the row q - k + S - 1, read by the Einsum in place of the Gather. Returns
// the folded table's value id (-1 when the fixture is not as expected).
int fold_height_table(ir::Graph& g) {
  ir::Node* e = node_named(g, kAttn0 + "Einsum");
  if (!e) return -1;
  const auto gather = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const ir::Node& n) {
    return !n.outputs.empty() && n.outputs[0] == e->inputs[1];
  });
  if (gather == g.nodes.end() || gather->op_type != "Gather" || !g.initializers.count(gather->inputs[0])) return -1;
  const Tensor rows = g.initializers.at(gather->inputs[0]);
  const int64_t S = (rows.dim(0) + 1) / 2, hd = rows.dim(1);
  const std::vector<float> r = rows.to_f32();
  std::vector<float> folded;
  for (int64_t q = 0; q < S; ++q)
    for (int64_t k = 0; k < S; ++k)
      folded.insert(folded.end(), r.begin() + (q - k + S - 1) * hd, r.begin() + (q - k + S) * hd);
  const int v = g.add_value("folded_height_table");
  g.values[size_t(v)].dtype = DType::Float32;
  g.initializers[v] = Tensor::from_f32({S, S, hd}, folded);
  e->inputs[1] = v;
  kestrel::test::drop_unread_nodes(g);  // the Gather and its index grid, folded away
  return v;
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

// ONNX Runtime folds the gathered tables into constants before a plugin EP
// sees the graph; the walk reads the [2S - 1, head_dim] rows back from one,
// and the fused node gives the fixture's answer.
TEST(SamFamily, AnAlreadyGatheredTableIsReadBack) {
  ir::Graph g = sam_graph();
  ASSERT_GE(fold_height_table(g), 0);
  families::ClaimReport r = families::claim_families(g);
  ASSERT_EQ(r.claims.size(), 1u);
  EXPECT_EQ(r.claims[0].layers, 4);
  const ir::Node* fused = node_named(g, r.claims[0].node);
  ASSERT_TRUE(fused);
  const int64_t id = fused->attr_i("claim_id", 0);
  auto compiled = backends::make_cpu_backend()->compile(g);
  backends::RunOptions opts;
  opts.threads = 2;
  std::vector<Tensor> out = compiled->run({read_npy(sam_fixture("input_0.npy"))}, opts);
  EXPECT_FALSE(compiled->fused_checks().withdrawn(id));
  Agreement a = agreement(out[0], read_npy(sam_fixture("torchscript_output_0.npy")));
  EXPECT_GE(a.cosine, 0.99999);
  EXPECT_LE(a.max_rel, 1e-4);
}

// A gathered table whose entries are not one row per offset q - k (one entry
// changed) has no [2S - 1, head_dim] table behind it: not claimed.
TEST(SamFamily, AGatheredTableThatIsNotByOffsetIsNotClaimed) {
  ir::Graph g = sam_graph();
  const int v = fold_height_table(g);
  ASSERT_GE(v, 0);
  Tensor& t = g.initializers.at(v);
  t.data<float>()[t.dim(1) * t.dim(2) + 5] += 0.25f;  // entry (0, 1), channel 5
  families::ClaimReport r = families::claim_families(g);
  EXPECT_TRUE(r.claims.empty());
  EXPECT_TRUE(mentions(r, "nor one already gathered"));
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

// Static memory planning: the greedy-by-size layout (core/lifetime_plan.h)
// and the executor's per-signature arenas (backends/arena_plan.h). Each
// graph here is run with and without an arena and must give the same bits.
#include <gtest/gtest.h>

#include <random>

#include "backends/cpu/executor.h"
#include "core/lifetime_plan.h"

using namespace kestrel;
using backends::ArenaPlan;
using backends::ArenaPlans;

namespace {

bool overlap_in_time(const LifetimeBuffer& a, const LifetimeBuffer& b) { return a.first <= b.last && b.first <= a.last; }

TEST(LifetimePlan, BuffersAliveTogetherNeverShareBytes) {
  std::mt19937 rng(7);
  std::vector<LifetimeBuffer> bufs;
  for (int i = 0; i < 400; ++i) {
    int first = int(rng() % 200);
    bufs.push_back({size_t(1 + rng() % 100000), first, first + int(rng() % 30)});
  }
  ArenaLayout l = plan_arena(bufs, 64);
  size_t sum = 0;
  for (size_t i = 0; i < bufs.size(); ++i) {
    sum += (bufs[i].bytes + 63) / 64 * 64;
    EXPECT_EQ(l.offsets[i] % 64, 0u);
    EXPECT_LE(l.offsets[i] + bufs[i].bytes, l.total);
    for (size_t j = 0; j < i; ++j) {
      if (!overlap_in_time(bufs[i], bufs[j])) continue;
      bool apart = l.offsets[i] + bufs[i].bytes <= l.offsets[j] || l.offsets[j] + bufs[j].bytes <= l.offsets[i];
      ASSERT_TRUE(apart) << "buffers " << i << " and " << j << " are alive together and overlap";
    }
  }
  EXPECT_GE(l.total, l.live_peak);
  EXPECT_LT(l.total, sum / 4) << "the layout should reuse the memory of buffers that died";
  std::printf("400 buffers: %zu bytes in all, most alive at once %zu, arena %zu (%.3fx the lower bound)\n", sum,
              l.live_peak, l.total, double(l.total) / double(l.live_peak));
}

TEST(LifetimePlan, AChainNeedsTwoBuffers) {
  // Each step reads the buffer before it: two buffers alternate.
  std::vector<LifetimeBuffer> bufs;
  for (int i = 0; i < 6; ++i) bufs.push_back({1000, i, i + 1});
  ArenaLayout l = plan_arena(bufs, 64);
  EXPECT_EQ(l.total, 2u * 1024u);
  EXPECT_EQ(l.live_peak, 2u * 1024u);
}

TEST(LifetimePlan, SmallBuffersFillTheGapsOfLargeOnes) {
  // A (0..1) and B (2..3) share bytes; C (1..2) lives with both and goes above them.
  ArenaLayout l = plan_arena({{4096, 0, 1}, {4096, 2, 3}, {1024, 1, 2}, {512, 3, 3}}, 64);
  EXPECT_EQ(l.offsets[0], l.offsets[1]);
  EXPECT_EQ(l.total, 4096u + 1024u);
}

TEST(LifetimePlan, RejectsBadInput) {
  EXPECT_THROW(plan_arena({{64, 0, 1}}, 48), Error);
  EXPECT_THROW(plan_arena({{64, 3, 1}}, 64), Error);
}

// ---- The executor's arenas ----

struct Builder {
  ir::Graph g;
  int value(const std::string& name) {
    int v = g.find(name);
    return v >= 0 ? v : g.add_value(name);
  }
  void node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
            std::map<std::string, ir::Attribute> attrs = {}) {
    ir::Node n;
    n.name = op + std::to_string(g.nodes.size());
    n.op_type = op;
    n.opset = 17;
    n.attrs = std::move(attrs);
    for (const auto& i : ins) n.inputs.push_back(value(i));
    for (const auto& o : outs) n.outputs.push_back(value(o));
    g.nodes.push_back(std::move(n));
  }
  void initializer(const std::string& name, Tensor t) { g.initializers[value(name)] = std::move(t); }
};

Tensor ramp(const Shape& s, float scale) {
  Tensor t(DType::Float32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float((i * 37) % 101) * scale - 1.5f;
  return t;
}

std::vector<Tensor> run(const backends::cpu::Plan& p, const std::vector<Tensor>& in, ArenaPlans* arenas) {
  backends::RunOptions o;
  o.threads = 2;
  return backends::cpu::execute(p, in, nullptr, o, arenas);
}

// Runs `inputs` in turn through one set of arenas (the first of each shape
// records, the rest are planned) and compares each to a run without one.
void expect_planned_runs_agree(const ir::Graph& g, const std::vector<std::vector<Tensor>>& inputs, ArenaPlans& arenas) {
  auto plan = backends::cpu::Plan::build(g);
  for (size_t k = 0; k < inputs.size(); ++k) {
    auto want = run(plan, inputs[k], nullptr);
    auto got = run(plan, inputs[k], &arenas);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].same_as(want[i])) << "run " << k << ", output " << i;
  }
}

TEST(ArenaPlan, AViewOutlivingItsSourceKeepsItsBytes) {
  // r = Relu(x) dies at the Reshape, but its bytes live on as v (a view)
  // until the Add at the end: the Sigmoid and Neg between must not reuse
  // them, as they would if the recording missed the view.
  Builder b;
  b.g.inputs = {b.value("x")};
  b.initializer("flat", Tensor::from_i64({64, 64}));
  b.initializer("cube", Tensor::from_i64({1, 64, 64}));
  b.node("Relu", {"x"}, {"r"});
  b.node("Reshape", {"r", "flat"}, {"v"});
  b.node("Sigmoid", {"x"}, {"s"});
  b.node("Neg", {"s"}, {"n"});
  b.node("Reshape", {"v", "cube"}, {"w"});
  b.node("Add", {"w", "n"}, {"y"});
  b.g.outputs = {b.value("y")};
  ArenaPlans arenas;
  expect_planned_runs_agree(b.g, {{ramp({1, 64, 64}, 0.03f)}, {ramp({1, 64, 64}, 0.05f)}, {ramp({1, 64, 64}, -0.02f)}},
                            arenas);
  auto p = arenas.find({ramp({1, 64, 64}, 0)});
  ASSERT_TRUE(p);
  const int r = b.g.find("r"), v = b.g.find("v"), w = b.g.find("w"), s = b.g.find("s"), n = b.g.find("n");
  EXPECT_TRUE(p->owner[size_t(r)]);
  EXPECT_EQ(p->offset[size_t(v)], p->offset[size_t(r)]);
  EXPECT_EQ(p->offset[size_t(w)], p->offset[size_t(r)]);
  EXPECT_NE(p->offset[size_t(s)], p->offset[size_t(r)]);
  EXPECT_NE(p->offset[size_t(n)], p->offset[size_t(r)]);
  EXPECT_EQ(p->offset[size_t(b.g.find("y"))], -1) << "a graph output leaves the run: never in the arena";
}

TEST(ArenaPlan, AChainReusesTheBytesOfTensorsThatDied) {
  Builder b;
  b.g.inputs = {b.value("x")};
  b.node("Relu", {"x"}, {"a"});
  b.node("Neg", {"a"}, {"c"});
  b.node("Sigmoid", {"c"}, {"d"});
  b.node("Neg", {"d"}, {"e"});
  b.node("Relu", {"e"}, {"y"});
  b.g.outputs = {b.value("y")};
  ArenaPlans arenas;
  Tensor x = ramp({1, 32, 100}, 0.01f);
  expect_planned_runs_agree(b.g, {{x}, {ramp({1, 32, 100}, 0.02f)}}, arenas);
  auto p = arenas.find({x});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->total, 2 * x.nbytes()) << "four tensors of 12,800 bytes, two alive at once";
}

TEST(ArenaPlan, DataDependentSizesFallBackToThePool) {
  // NonZero's count is the data's: the recorded run has 3, a later one 40,
  // more than the slots planned for them hold.
  Builder b;
  b.g.inputs = {b.value("x")};
  ir::Attribute to;
  to.kind = ir::Attribute::Kind::Int;
  to.i = int64_t(1);  // float
  b.node("NonZero", {"x"}, {"nz"});
  b.node("Cast", {"nz"}, {"f"}, {{"to", to}});
  b.node("Neg", {"f"}, {"n"});
  b.node("Sigmoid", {"n"}, {"y"});
  b.g.outputs = {b.value("y")};
  auto with = [](int count) {
    Tensor t(DType::Float32, {64});
    for (int i = 0; i < count; ++i) t.data<float>()[i * 64 / count] = 1.0f;
    return t;
  };
  ArenaPlans arenas;
  expect_planned_runs_agree(b.g, {{with(3)}, {with(40)}, {with(1)}, {with(0)}}, arenas);
}

TEST(ArenaPlan, OutputsOfOneRunSurviveTheNext) {
  // y is a view of an intermediate: it escapes the run, so neither it nor
  // its source may be in an arena the next run overwrites.
  Builder b;
  b.g.inputs = {b.value("x")};
  b.initializer("flat", Tensor::from_i64({-1}));
  b.node("Relu", {"x"}, {"r"});
  b.node("Reshape", {"r", "flat"}, {"y"});
  b.node("Neg", {"x"}, {"z"});
  b.g.outputs = {b.value("y"), b.value("z")};
  auto plan = backends::cpu::Plan::build(b.g);
  ArenaPlans arenas;
  run(plan, {ramp({4, 64}, 0.1f)}, &arenas);  // records
  auto kept = run(plan, {ramp({4, 64}, 0.2f)}, &arenas);
  std::vector<Tensor> copies;
  for (const Tensor& t : kept) copies.push_back(t.clone());
  run(plan, {ramp({4, 64}, -0.3f)}, &arenas);
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_TRUE(kept[i].same_as(copies[i])) << "output " << i;
}

TEST(ArenaPlan, SubgraphsAndManySignatures) {
  // An If whose branches return an outer intermediate unchanged or negated:
  // the If's output is then a view of an arena tensor. Shapes change run to
  // run, past the number of signatures kept.
  Builder then_b, else_b;
  then_b.g.name = "then";
  then_b.node("Identity", {"r"}, {"t"});
  then_b.g.outputs = {then_b.value("t")};
  then_b.g.outer_refs = {then_b.value("r")};
  else_b.g.name = "else";
  else_b.node("Neg", {"r"}, {"e"});
  else_b.g.outputs = {else_b.value("e")};
  else_b.g.outer_refs = {else_b.value("r")};
  Builder b;
  b.g.inputs = {b.value("x"), b.value("c")};
  ir::Attribute tb, eb;
  tb.kind = eb.kind = ir::Attribute::Kind::Graph;
  tb.g = std::make_shared<ir::Graph>(then_b.g);
  eb.g = std::make_shared<ir::Graph>(else_b.g);
  b.node("Relu", {"x"}, {"r"});
  b.node("If", {"c"}, {"i"}, {{"then_branch", tb}, {"else_branch", eb}});
  b.node("Sigmoid", {"x"}, {"s"});
  b.node("Add", {"i", "s"}, {"y"});
  b.g.outputs = {b.value("y")};
  auto flag = [](bool v) {
    Tensor t(DType::Bool, {});
    t.data<bool>()[0] = v;
    return t;
  };
  std::vector<std::vector<Tensor>> inputs;
  for (int n = 1; n <= int(ArenaPlans::kept) + 3; ++n)
    for (bool c : {true, false, true}) inputs.push_back({ramp({n, 50}, 0.01f * float(n)), flag(c)});
  ArenaPlans arenas;
  expect_planned_runs_agree(b.g, inputs, arenas);
}

TEST(RunArena, CopiesOutAViewThePlanDidNotForesee) {
  auto plan = std::make_shared<ArenaPlan>();
  plan->total = 256;
  plan->offset = {0, -1};
  plan->bytes = {256, 0};
  plan->owner = {1, 0};
  plan->made_at = {3, -1};
  backends::cpu::RunArena arena(plan);
  std::vector<Tensor> env(2);
  EXPECT_FALSE(arena.place(0, 2, DType::Float32, {64}).defined()) << "made at another node than recorded";
  env[0] = arena.place(0, 3, DType::Float32, {64});
  ASSERT_TRUE(env[0].defined());
  for (int i = 0; i < 64; ++i) env[0].data<float>()[i] = float(i);
  EXPECT_FALSE(arena.place(0, 3, DType::Float32, {65}).defined()) << "too big for its slot";
  EXPECT_FALSE(arena.place(1, 3, DType::Float32, {1}).defined()) << "no slot";
  env[1] = env[0].reshaped({8, 8});
  arena.settle({0, 1}, env);
  EXPECT_EQ(env[0].storage().get(), env[0].storage().get());
  EXPECT_NE(env[1].storage().get(), env[0].storage().get()) << "value 1 has no region: copied out";
  EXPECT_EQ(env[1].to_f32(), env[0].to_f32());
}

}  // namespace

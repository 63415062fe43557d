// The CPU backend's direct convolution (backends/cpu/direct_conv.h) against
// a plain loop, at every instruction-set level this CPU has and on 1 and 3
// threads: 1x1 layers (a last tile past the input's end, a chunk written
// straight into the output), strides and dilations through the
// phase-split copy, asymmetric padding, groups, 1-D windows, more taps than
// one pass over a tile holds, and the bias, residual and activation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/conv_weight_packing.h"
#include "backends/cpu/direct_conv.h"
#include "core/cpu_isa.h"
#include "plain_conv.h"

namespace kestrel {
namespace {

struct Case {
  std::string label;
  int64_t N, C, M, group;
  std::vector<int64_t> in, kernel, stride, dil, pad_begin, pad_end;
  bool residual = false;
  ops::Activation act = ops::Activation::None;
};

ops::ConvShape shape_of(const Case& c) {
  ops::ConvShape s{c.N, c.C, c.M, c.group, c.C / c.group, c.M / c.group, {}};
  ops::WindowGeom& g = s.g;
  g.nd = int(c.in.size());
  g.in = c.in, g.kernel = c.kernel, g.stride = c.stride, g.dil = c.dil, g.pad_begin = c.pad_begin, g.pad_end = c.pad_end;
  for (size_t d = 0; d < c.in.size(); ++d)
    g.out.push_back((c.in[d] + c.pad_begin[d] + c.pad_end[d] - c.dil[d] * (c.kernel[d] - 1) - 1) / c.stride[d] + 1);
  return s;
}

std::vector<Case> cases() {
  using A = ops::Activation;
  return {
      {"1x1, 63 positions (a last tile past the input), 13 channels", 2, 5, 13, 1, {7, 9}, {1, 1}, {1, 1},
       {1, 1}, {0, 0}, {0, 0}, true, A::Relu},
      {"1x1, 1600 positions, 24 channels", 1, 16, 24, 1, {40, 40}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {"1x1 stride 2 (phases)", 1, 7, 9, 1, {15, 18}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {"3x3 pad 1, 10 channels", 1, 6, 10, 1, {17, 19}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true, A::Silu},
      {"3x3 stride 2 pad 1", 2, 4, 9, 1, {21, 23}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {"3x3 dilation 2 pad 2", 1, 5, 8, 1, {16, 15}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}, false, A::Relu},
      {"2x3 stride (2, 1), pads 0,1 / 2,0", 1, 3, 4, 1, {14, 13}, {2, 3}, {2, 1}, {1, 1}, {0, 1}, {2, 0}},
      {"5x5 stride 3 pad 2 over a 3-wide map", 1, 3, 5, 1, {11, 3}, {5, 5}, {3, 3}, {1, 1}, {2, 2}, {2, 2}},
      {"groups 2 of 3 channels", 1, 6, 8, 2, {12, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true},
      {"1-D kernel 5 stride 3 pad 2", 2, 6, 9, 1, {50}, {5}, {3}, {1}, {2}, {2}},
      {"3x3, 80 channels: 720 taps, several passes a tile", 1, 80, 17, 1, {12, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1},
       {1, 1}, true, A::Relu},
  };
}

TEST(CpuDirectConv, MatchesAPlainLoopAtEveryLevelAndThreadCount) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const Case& c : cases()) {
    const ops::ConvShape s = shape_of(c);
    const int64_t K = s.Cg * s.g.kernel_size(), OS = s.g.out_size();
    std::vector<float> x(size_t(s.N * s.C * s.g.in_size())), w(size_t(s.M * K)), b(size_t(s.M)),
        r(size_t(s.N * s.M * OS));
    for (auto* v : {&x, &w, &b, &r})
      for (float& f : *v) f = u(rng);
    const std::vector<double> want = plain_conv(s, x, w, b, c.residual ? &r : nullptr, c.act);
    ops::Epilogue epi;
    epi.kind = c.act;
    for (CpuIsa isa : {CpuIsa::Baseline, CpuIsa::Avx2, CpuIsa::Avx512}) {
      if (isa > cpu_isa_detected()) continue;
      for (int threads : {1, 3}) {
        // The weights packed by the kernel (on 1 thread) or beforehand, as
        // the graph's packing gives them (on 3).
        const std::vector<float> packed = backends::cpu::pack_direct_conv_weights(w.data(), s.M, s.group, K);
        std::vector<float> y(want.size(), std::nanf(""));
        backends::cpu::direct_conv(threads, s, x.data(), w.data(), threads == 1 ? nullptr : packed.data(), b.data(),
                                   c.residual ? r.data() : nullptr, epi, y.data(), isa);
        // Up to 720 products of values in [-1, 1] summed in float32 in
        // another order: errors near 1e-5; a wrong or missing tap is off
        // by 1e-2 or more.
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(y[i], want[i], 2e-4) << c.label << ", " << cpu_isa_name(isa) << ", " << threads
                                           << " threads, output " << i << " of " << want.size();
      }
    }
  }
}

// The shapes the direct form takes: wider windows on maps its tiles fill,
// or small layers whatever the waste; not layers of at most 8 output
// positions (the narrow product's), not 1x1 layers (oneDNN's product on the
// input in place is as fast), not depthwise ones (their own kernel), not
// larger layers on maps whose padding columns and last tile waste over a
// tenth of the work.
TEST(CpuDirectConv, TakesWideWindowsOnMapsThatFillItsTiles) {
  auto suits = [](Case c) { return backends::cpu::direct_conv_suits(shape_of(c), CpuIsa::Avx512); };
  EXPECT_TRUE(suits({"", 1, 64, 64, 1, {80, 80}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}));
  EXPECT_TRUE(suits({"", 1, 12, 16, 1, {208, 208}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}));
  EXPECT_TRUE(suits({"", 1, 64, 128, 1, {104, 104}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}}));
  EXPECT_FALSE(suits({"", 1, 64, 64, 1, {52, 52}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}}));
  EXPECT_FALSE(suits({"", 1, 64, 64, 64, {52, 52}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}));
  EXPECT_FALSE(suits({"", 1, 128, 128, 1, {13, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}));
  EXPECT_TRUE(suits({"", 1, 256, 6, 1, {4, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}));
  // At most 8 output positions go to the narrow product (Silero VAD's
  // encoder: 3 positions from 129 channels; a 2x2 map), 9 stay.
  EXPECT_FALSE(suits({"", 1, 129, 128, 1, {5}, {3}, {1}, {1}, {0}, {0}}));
  EXPECT_FALSE(suits({"", 1, 64, 64, 1, {4, 4}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}}));
  EXPECT_TRUE(suits({"", 1, 64, 64, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}));
}

}  // namespace
}  // namespace kestrel

namespace kestrel {
namespace {

ir::Node conv_node(ir::Graph& g, const std::string& x, const std::string& w, const std::string& y, int64_t group) {
  ir::Node n;
  n.op_type = "Conv";
  n.name = y;
  n.opset = 11;
  n.inputs = {g.add_value(x), g.add_value(w)};
  n.outputs = {g.add_value(y)};
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Int;
  a.i = group;
  n.attrs["group"] = a;
  return n;
}

}  // namespace

// The load-time packing (backends/cpu/conv_weight_packing.h) gives the
// Convs the direct form may take their packed weights, once per weight
// tensor shared by several, in the order the kernel packs them; 1x1 and
// depthwise layers and weights computed at run time are left as they are.
TEST(CpuConvWeightPacking, PacksConstantWideWindowsOncePerWeights) {
  ir::Graph g;
  std::vector<float> w3(4 * 6 * 3 * 3), w1(4 * 6), wd(6 * 9);
  for (size_t i = 0; i < w3.size(); ++i) w3[i] = float(i % 13) - 6;
  g.initializers[g.add_value("w3")] = Tensor::from_f32({4, 6, 3, 3}, w3);
  g.initializers[g.add_value("w1")] = Tensor::from_f32({4, 6, 1, 1}, w1);
  g.initializers[g.add_value("wd")] = Tensor::from_f32({6, 1, 3, 3}, wd);
  g.nodes = {conv_node(g, "x", "w3", "a", 1), conv_node(g, "x", "w3", "b", 1), conv_node(g, "x", "w1", "c", 1),
             conv_node(g, "x", "wd", "d", 6), conv_node(g, "x", "dynamic_w", "e", 1)};
  const size_t initializers = g.initializers.size();
  EXPECT_EQ(backends::cpu::pack_conv_weights(g), 2);
  EXPECT_EQ(g.initializers.size(), initializers + 1);
  for (int i : {0, 1}) {
    const ir::Node& n = g.nodes[size_t(i)];
    ASSERT_EQ(n.attr_i(backends::cpu::kPackedWeightsAttr, -1), 4);
    ASSERT_EQ(n.inputs.size(), 5u);
    EXPECT_EQ(n.inputs[2], -1);
    EXPECT_EQ(g.initializers.at(n.inputs[4]).to_f32(), backends::cpu::pack_direct_conv_weights(w3.data(), 4, 1, 54));
  }
  for (int i : {2, 3, 4}) EXPECT_FALSE(g.nodes[size_t(i)].has(backends::cpu::kPackedWeightsAttr)) << i;
}

}  // namespace kestrel

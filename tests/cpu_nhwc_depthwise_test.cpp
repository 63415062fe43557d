// The CPU's channels-last depthwise convolution (backends/cpu/nhwc_depthwise.h)
// against the plain loop in double (plain_conv.h, through transposes), at
// each level this CPU has (AVX2: 8 channels a vector, AVX-512: 16), on 1
// and 3 threads (3 splits a map of few rows by channel blocks too): whole
// and ragged blocks of channels, runs not a multiple of the tile's
// positions, the edge columns and rows the padding reaches, strides,
// dilations and asymmetric padding, windows unrolled (3x3, 5x5) and not,
// maps smaller than the window, rows wider than a few tiles (tiles at the
// edges and inside, a tail), a batch of two, and the bias, residual and
// activations (Relu and Clip in registers, NaN kept as the reference keeps
// it; the others, and any after a residual, on the finished rows).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/nhwc_depthwise.h"
#include "core/cpu_isa.h"
#include "plain_conv.h"

namespace kestrel {
namespace {

struct Case {
  std::string label;
  int64_t N, C;
  std::vector<int64_t> in, kernel, stride, dil, pad_begin, pad_end;
  bool residual = false;
  ops::Activation act = ops::Activation::None;
  float a = 0, b = 0;
  bool nan_input = false;  // one input value NaN
};

ops::ConvShape shape_of(const Case& c) {
  return conv_shape_2d(c.N, c.C, c.C, c.C, c.in, c.kernel, c.stride, c.dil, c.pad_begin, c.pad_end);
}

std::vector<Case> cases() {
  using A = ops::Activation;
  return {
      {"3x3 pad 1, 16 channels, 13 columns (a tile and a tail), Relu", 1, 16, {9, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1},
       {1, 1}, false, A::Relu},
      {"3x3 stride 2 pad 1, 32 channels, batch 2, Clip 0..6", 2, 32, {15, 17}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1},
       false, A::Clip, 0.f, 0.5f},
      {"3x3, 24 channels (ragged at 16), residual, SiLU", 1, 24, {7, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true,
       A::Silu},
      {"3x3, 5 channels (ragged at 8), LeakyRelu", 1, 5, {6, 21}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false,
       A::LeakyRelu, 0.1f},
      {"5x5 pad 2, 40 channels, 9 columns (two edge columns a side)", 1, 40, {8, 9}, {5, 5}, {1, 1}, {1, 1}, {2, 2},
       {2, 2}},
      {"5x5 stride 2, pads 2,1 / 0,2, 20 channels, Relu", 1, 20, {16, 19}, {5, 5}, {2, 2}, {1, 1}, {2, 1}, {0, 2},
       false, A::Relu},
      {"3x3 dilation 2 pad 2, 48 channels, residual", 1, 48, {10, 23}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}, true},
      {"7x7 pad 3 (not unrolled), one input column", 1, 8, {6, 1}, {7, 7}, {1, 1}, {1, 1}, {3, 3}, {3, 3}},
      {"2x3 stride (1, 2), no padding, 33 channels", 1, 33, {8, 20}, {2, 3}, {1, 2}, {1, 1}, {0, 0}, {0, 0}},
      {"1x1, 12 channels", 1, 12, {3, 10}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, false, A::Relu},
      {"5x5 pad 2 on a 2x3 map (every position at an edge)", 1, 16, {2, 3}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}},
      {"3x3, 128 channels on a 3x4 map (few rows: channel blocks split), residual, Relu", 1, 128, {3, 4}, {3, 3},
       {1, 1}, {1, 1}, {1, 1}, {1, 1}, true, A::Relu},
      {"3x3 pad 1, 16 channels, 37 columns (whole tiles inside, a tail at the edge)", 1, 16, {3, 37}, {3, 3}, {1, 1},
       {1, 1}, {1, 1}, {1, 1}},
      {"3x3 stride 2 no padding, 24 channels, 41 columns", 1, 24, {5, 41}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0},
       false, A::Relu},
      {"5x5 stride 2 pad 2, 16 channels, 45 columns", 1, 16, {6, 45}, {5, 5}, {2, 2}, {1, 1}, {2, 2}, {2, 2}},
      // Padding wider than the window: whole windows in the padding (their
      // outputs the bias), on the whole-row tiles and on the per-tap tile.
      {"3x3 pad 4 (windows wholly in the padding)", 1, 16, {3, 4}, {3, 3}, {1, 1}, {1, 1}, {4, 4}, {4, 4}},
      {"3x3 dilation 2 pad 7 (windows wholly in the padding)", 1, 20, {4, 5}, {3, 3}, {1, 1}, {2, 2}, {7, 7},
       {7, 7}, false, A::Relu},
      {"3x3 pad 1, a NaN input through Relu", 1, 16, {5, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false, A::Relu,
       0, 0, true},
  };
}

std::vector<CpuIsa> levels_here() {
  std::vector<CpuIsa> levels;
  for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512})
    if (cpu_isa_detected() >= isa) levels.push_back(isa);
  return levels;
}

TEST(CpuNhwcDepthwise, MatchesAPlainLoopAtEachLevel) {
#if !defined(__x86_64__)
  EXPECT_EQ(backends::cpu::nhwc_depthwise_kernel(CpuIsa::Baseline), nullptr);  // (arm64 keeps oneDNN's kernel)
  GTEST_SKIP() << "x86-64 kernels";
#endif
  ASSERT_NE(backends::cpu::nhwc_depthwise_kernel(CpuIsa::Avx2), nullptr);
  ASSERT_NE(backends::cpu::nhwc_depthwise_kernel(CpuIsa::Avx512), nullptr);
  EXPECT_EQ(backends::cpu::nhwc_depthwise_kernel(CpuIsa::Baseline), nullptr);
  const std::vector<CpuIsa> levels = levels_here();
  if (levels.empty()) GTEST_SKIP() << "this CPU has no AVX2";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const Case& c : cases()) {
    const ops::ConvShape s = shape_of(c);
    ASSERT_TRUE(backends::cpu::nhwc_depthwise_suits(s)) << c.label;
    const ops::Window2D v(s.g);
    std::vector<float> x(size_t(s.N * v.H * v.W * s.C)), w(size_t(s.C * v.KH * v.KW)), b(size_t(s.C)),
        r(size_t(s.N * v.OH * v.OW * s.C));
    for (auto* vec : {&x, &w, &b, &r})
      for (float& f : *vec) f = u(rng);
    if (c.nan_input) x[x.size() / 2 + 3] = std::nanf("");
    const std::vector<float> rp = to_planar(r, s.N, v.OH, v.OW, s.C);
    const std::vector<double> want =
        to_channels_last(plain_conv(s, to_planar(x, s.N, v.H, v.W, s.C), w, b, c.residual ? &rp : nullptr, c.act, c.a,
                                    c.b),
                         s.N, v.OH, v.OW, s.C);
    ops::Epilogue epi;
    epi.kind = c.act, epi.a = c.a, epi.b = c.b;
    for (CpuIsa isa : levels) {
      const backends::cpu::NhwcDepthwiseKernel* kernel = backends::cpu::nhwc_depthwise_kernel(isa);
      const backends::cpu::NhwcDepthwisePacked packed =
          backends::cpu::pack_nhwc_depthwise(s, kernel->width, w.data(), b.data());
      for (int threads : {1, 3}) {
        std::vector<float> y(want.size(), std::nanf(""));
        backends::cpu::nhwc_depthwise(threads, *kernel, s, x.data(), packed, c.residual ? r.data() : nullptr, epi,
                                      y.data());
        int nans = 0;
        // At most 49 products of values in [-1, 1] summed in float32 in
        // another order: errors near 1e-6; a wrong or missing tap is off by
        // 1e-2 or more. (Every output was NaN before the call: one left
        // unwritten fails.)
        for (size_t i = 0; i < want.size(); ++i) {
          const std::string where = c.label + ", " + cpu_isa_name(isa) + ", " + std::to_string(threads) +
                                    " threads, output " + std::to_string(i) + " of " + std::to_string(want.size());
          if (std::isnan(want[i])) {
            ASSERT_TRUE(std::isnan(y[i])) << where;
            ++nans;
            continue;
          }
          ASSERT_NEAR(y[i], want[i], 2e-5) << where;
        }
        if (c.nan_input) EXPECT_EQ(nans, 9) << c.label;  // (the 3x3 windows that reach it)
      }
    }
  }
}

// Which kernel the chains take at each level (nhwc_depthwise_for says why).
TEST(CpuNhwcDepthwise, ChainsTakeItOnAvx512WithEightWideVectorsForChannelsOfWholeEightsOnly) {
  auto dw = [](int64_t C) {
    ops::ConvShape s{1, C, C, C, 1, 1, {}};
    s.g.nd = 2;
    s.g.kernel = {3, 3};
    return s;
  };
  using backends::cpu::nhwc_depthwise_for;
  using backends::cpu::nhwc_depthwise_kernel;
#if defined(__x86_64__)
  EXPECT_EQ(nhwc_depthwise_for(dw(32), CpuIsa::Avx512), nhwc_depthwise_kernel(CpuIsa::Avx512));
  EXPECT_EQ(nhwc_depthwise_for(dw(16), CpuIsa::Avx512), nhwc_depthwise_kernel(CpuIsa::Avx512));
  EXPECT_EQ(nhwc_depthwise_for(dw(20), CpuIsa::Avx512), nhwc_depthwise_kernel(CpuIsa::Avx512));
  EXPECT_EQ(nhwc_depthwise_for(dw(24), CpuIsa::Avx512), nhwc_depthwise_kernel(CpuIsa::Avx2));
  EXPECT_EQ(nhwc_depthwise_for(dw(88), CpuIsa::Avx512), nhwc_depthwise_kernel(CpuIsa::Avx2));
#endif
  EXPECT_EQ(nhwc_depthwise_for(dw(32), CpuIsa::Avx2), nullptr);
  EXPECT_EQ(nhwc_depthwise_for(dw(32), CpuIsa::Baseline), nullptr);
  ops::ConvShape dense = dw(32);
  dense.group = 1, dense.Cg = 32, dense.Mg = 32;
  EXPECT_EQ(nhwc_depthwise_for(dense, CpuIsa::Avx512), nullptr);
}

// What the chains hand it: 2-D layers with one input and one output channel a group.
TEST(CpuNhwcDepthwise, TakesDepthwiseLayersOnly) {
  auto suits = [](int64_t C, int64_t M, int64_t group, std::vector<int64_t> k) {
    ops::ConvShape s{1, C, M, group, C / group, M / group, {}};
    s.g.nd = int(k.size());
    s.g.kernel = k;
    return backends::cpu::nhwc_depthwise_suits(s);
  };
  EXPECT_TRUE(suits(32, 32, 32, {3, 3}));
  EXPECT_TRUE(suits(7, 7, 7, {5, 5}));
  EXPECT_FALSE(suits(32, 64, 32, {3, 3}));  // (a channel multiplier of 2)
  EXPECT_FALSE(suits(32, 32, 16, {3, 3}));
  EXPECT_FALSE(suits(32, 32, 1, {3, 3}));
  EXPECT_FALSE(suits(32, 32, 32, {3}));
}

}  // namespace
}  // namespace kestrel

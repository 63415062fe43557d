// The CPU's channels-last direct convolution (backends/cpu/nhwc_conv.h)
// against the plain loop in double (plain_conv.h, through transposes), on 1 and 3 threads
// (3 splits a map of few rows by channel blocks too): whole and ragged
// blocks of 16 output channels, rows of outputs not a multiple of the
// tile's positions, strides, dilations and asymmetric padding through the
// padded copy, 1x1 layers read in place or through the copy, narrow last
// blocks (8 channels or fewer) whole and ragged, a batch of two, wide windows with many taps, and the bias,
// residual and activation. Forced on wherever the CPU has AVX2, whatever
// the level the chains would pick it at.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/nhwc_conv.h"
#include "core/cpu_isa.h"
#include "plain_conv.h"

namespace kestrel {
namespace {

struct Case {
  std::string label;
  int64_t N, C, M;
  std::vector<int64_t> in, kernel, stride, dil, pad_begin, pad_end;
  bool residual = false;
  ops::Activation act = ops::Activation::None;
};

ops::ConvShape shape_of(const Case& c) {
  return conv_shape_2d(c.N, c.C, c.M, 1, c.in, c.kernel, c.stride, c.dil, c.pad_begin, c.pad_end);
}

std::vector<Case> cases() {
  using A = ops::Activation;
  return {
      {"3x3 pad 1, 16 -> 32 (whole blocks), 13 columns (two tiles and one)", 1, 16, 32, {9, 13}, {3, 3}, {1, 1},
       {1, 1}, {1, 1}, {1, 1}, false, A::Relu},
      {"3x3, 24 -> 20 (a ragged last block), residual, SiLU", 1, 24, 20, {7, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1},
       {1, 1}, true, A::Silu},
      {"3x3 stride 2, batch 2, 8 -> 9", 2, 8, 9, {15, 17}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {"3x3 dilation 4 pad 5 (M-LSD's), 32 -> 48", 1, 32, 48, {12, 14}, {3, 3}, {1, 1}, {4, 4}, {5, 5}, {5, 5}, true},
      {"5x5 stride 2, pads 2,1 / 0,2", 1, 12, 40, {16, 19}, {5, 5}, {2, 2}, {1, 1}, {2, 1}, {0, 2}, false, A::Relu},
      {"2x3 stride (1, 2), no padding", 1, 10, 17, {8, 20}, {2, 3}, {1, 2}, {1, 1}, {0, 0}, {0, 0}},
      {"3x3, 128 -> 64 on a 3x4 map (few rows: channel blocks split)", 1, 128, 64, {3, 4}, {3, 3}, {1, 1}, {1, 1},
       {1, 1}, {1, 1}, true, A::Relu},
      {"one output column, 7x7 pad 3", 1, 8, 16, {6, 1}, {7, 7}, {1, 1}, {1, 1}, {3, 3}, {3, 3}},
      {"1x1, 24 -> 28 read in place (a block and 12 ragged), residual, Relu, 29 columns", 2, 24, 28, {5, 29},
       {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, true, A::Relu},
      {"1x1, 36 -> 42 (two blocks and a narrow ragged one), residual", 1, 36, 42, {4, 14}, {1, 1}, {1, 1}, {1, 1},
       {0, 0}, {0, 0}, true},
      {"3x3, 16 -> 24 (a block and a narrow one of 8 whole channels), residual, 25 columns", 1, 16, 24, {3, 25},
       {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true, A::Relu},
      {"1x1 stride 2 (through the copy), 16 -> 20, residual", 1, 16, 20, {9, 15}, {1, 1}, {2, 2}, {1, 1}, {0, 0},
       {0, 0}, true},
      {"1x1 pad 1 (through the copy), 12 -> 5, residual", 1, 12, 5, {3, 5}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1},
       true, A::Relu},
  };
}

TEST(CpuNhwcConv, MatchesAPlainLoopOnOneAndThreeThreads) {
  const backends::cpu::NhwcConvKernel* kernel = backends::cpu::nhwc_conv_kernel(CpuIsa::Avx2);
#if defined(__x86_64__)
  ASSERT_NE(kernel, nullptr);
  if (cpu_isa_detected() < CpuIsa::Avx2) GTEST_SKIP() << "this CPU has no AVX2";
#else
  EXPECT_EQ(kernel, nullptr);  // (arm64 keeps oneDNN's kernels)
  GTEST_SKIP() << "an x86-64 kernel";
#endif
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const Case& c : cases()) {
    const ops::ConvShape s = shape_of(c);
    ASSERT_TRUE(backends::cpu::nhwc_conv_suits(s, c.residual)) << c.label;
    const ops::Window2D v(s.g);
    std::vector<float> x(size_t(s.N * v.H * v.W * s.C)), w(size_t(s.M * s.C * v.KH * v.KW)), b(size_t(s.M)),
        r(size_t(s.N * v.OH * v.OW * s.M));
    for (auto* vec : {&x, &w, &b, &r})
      for (float& f : *vec) f = u(rng);
    const std::vector<float> rp = to_planar(r, s.N, v.OH, v.OW, s.M);
    const std::vector<double> want = to_channels_last(
        plain_conv(s, to_planar(x, s.N, v.H, v.W, s.C), w, b, c.residual ? &rp : nullptr, c.act), s.N, v.OH, v.OW, s.M);
    ops::Epilogue epi;
    epi.kind = c.act;
    const backends::cpu::NhwcPacked packed = backends::cpu::pack_nhwc_conv(s, w.data(), b.data());
    for (int threads : {1, 3}) {
      std::vector<float> y(want.size(), std::nanf(""));
      backends::cpu::nhwc_conv(threads, *kernel, s, x.data(), packed, c.residual ? r.data() : nullptr, epi, y.data());
      // Up to 1152 products of values in [-1, 1] summed in float32 in
      // another order: errors near 1e-5; a wrong or missing tap is off by
      // 1e-2 or more.
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(y[i], want[i], 3e-4) << c.label << ", " << threads << " threads, output " << i << " of "
                                         << want.size();
    }
  }
}

// What the chains hand it: dense 2-D windows of at least 8 input channels,
// and 1x1 ones only where they add a residual of channels in no whole
// number of 8-float vectors; not groups, depthwise layers, 1-D windows or
// 3- and 4-channel stems (oneDNN's kernels, as fast there).
TEST(CpuNhwcConv, TakesDenseWindowsOfEightChannelsOrMore) {
  auto suits = [](int64_t C, int64_t M, int64_t group, std::vector<int64_t> k, bool residual = false) {
    ops::ConvShape s{1, C, M, group, C / group, M / group, {}};
    s.g.nd = int(k.size());
    s.g.kernel = k;
    return backends::cpu::nhwc_conv_suits(s, residual);
  };
  EXPECT_TRUE(suits(8, 32, 1, {3, 3}));
  EXPECT_TRUE(suits(128, 32, 1, {5, 5}));
  EXPECT_TRUE(suits(24, 28, 1, {1, 1}, true));
  EXPECT_FALSE(suits(24, 28, 1, {1, 1}));
  EXPECT_FALSE(suits(24, 24, 1, {1, 1}, true));
  EXPECT_FALSE(suits(64, 32, 1, {1, 1}));
  EXPECT_FALSE(suits(64, 32, 2, {3, 3}));
  EXPECT_FALSE(suits(32, 32, 32, {3, 3}));
  EXPECT_FALSE(suits(4, 32, 1, {3, 3}));
  EXPECT_FALSE(suits(4, 28, 1, {1, 1}, true));
  EXPECT_FALSE(suits(64, 32, 1, {3}));
}

}  // namespace
}  // namespace kestrel

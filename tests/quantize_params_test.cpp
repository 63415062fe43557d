// The arithmetic of `kestrel quantize` (src/quantize/quant_params.h): the
// activation and weight parameters as ONNX Runtime's quantization tool
// forms them, and the three ways of choosing an activation's range.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "quantize/quant_params.h"

namespace kestrel::quantize {
namespace {

TEST(QuantParams, ActivationRangeHoldsZeroAndMapsItExactly) {
  ActivationParams p = activation_params({-1.0f, 3.0f});
  EXPECT_FLOAT_EQ(p.scale, 4.0f / 255.0f);
  EXPECT_EQ(p.zero_point, 64);  // round(1 / (4 / 255)) = round(63.75)
  p = activation_params({2.0f, 6.0f});  // widened to [0, 6]: zero stays exact
  EXPECT_FLOAT_EQ(p.scale, 6.0f / 255.0f);
  EXPECT_EQ(p.zero_point, 0);
  p = activation_params({-5.0f, -1.0f});  // widened to [-5, 0]
  EXPECT_EQ(p.zero_point, 255);
  p = activation_params({0.0f, 0.0f});  // all zeros: any scale works, 1 chosen
  EXPECT_EQ(p.scale, 1.0f);
  EXPECT_EQ(p.zero_point, 0);
}

TEST(QuantParams, WeightsPerChannelAreSymmetricInt8) {
  // [2 channels, 3]: channel 0's largest magnitude is 2, channel 1's is 0.5.
  const Tensor w = Tensor::from_f32({2, 3}, {2.0f, -1.0f, 0.5f, 0.25f, -0.5f, 0.0f});
  const QuantizedWeight q = quantize_weight(w, 0);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_FLOAT_EQ(q.scales[0], 2.0f / 127.0f);
  EXPECT_FLOAT_EQ(q.scales[1], 0.5f / 127.0f);
  const int8_t* v = q.q.data<int8_t>();
  EXPECT_EQ(v[0], 127);
  EXPECT_EQ(v[1], -64);  // -1 / (2 / 127) = -63.5: half to even
  EXPECT_EQ(v[2], 32);   // 31.75
  EXPECT_EQ(v[3], 64);   // 63.5: half to even
  EXPECT_EQ(v[4], -127);
  EXPECT_EQ(v[5], 0);
  // Along axis 1 (a MatMul's columns): three scales.
  const QuantizedWeight cols = quantize_weight(w, 1);
  ASSERT_EQ(cols.scales.size(), 3u);
  EXPECT_FLOAT_EQ(cols.scales[0], 2.0f / 127.0f);
  EXPECT_FLOAT_EQ(cols.scales[2], 0.5f / 127.0f);
  // One scale for the tensor.
  const QuantizedWeight all = quantize_weight(w, -1);
  ASSERT_EQ(all.scales.size(), 1u);
  EXPECT_EQ(all.q.data<int8_t>()[4], -32);  // -0.5 / (2 / 127) = -31.75
}

// --reduce-range: the largest magnitude at 64 steps, nothing past them.
TEST(QuantParams, ReducedRangeWeightsStayWithin64Steps) {
  const Tensor w = Tensor::from_f32({2, 3}, {2.0f, -1.0f, 0.5f, 0.25f, -0.5f, 0.0f});
  const QuantizedWeight q = quantize_weight(w, 0, kReducedRange);
  EXPECT_FLOAT_EQ(q.scales[0], 2.0f / 64.0f);
  EXPECT_FLOAT_EQ(q.scales[1], 0.5f / 64.0f);
  const int8_t* v = q.q.data<int8_t>();
  EXPECT_EQ(v[0], 64);
  EXPECT_EQ(v[1], -32);
  EXPECT_EQ(v[2], 16);
  EXPECT_EQ(v[3], 32);
  EXPECT_EQ(v[4], -64);
  EXPECT_EQ(v[5], 0);
}

TEST(QuantParams, PercentileDropsTheRarestValuesAtEachEnd) {
  std::vector<float> v(100001);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) - 50000.0f;
  std::shuffle(v.begin(), v.end(), std::mt19937(3));
  const Range r = percentile_range(v, 0.001);  // 99.9%
  EXPECT_EQ(r.lo, -49900.0f);
  EXPECT_EQ(r.hi, 49900.0f);
}

TEST(QuantParams, EntropyClipsALongTailButNotAUniformRange) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> gauss(200000);
  Range mm{INFINITY, -INFINITY};
  for (float& x : gauss) x = normal(rng), mm.lo = std::min(mm.lo, x), mm.hi = std::max(mm.hi, x);
  const Range g = entropy_range(gauss, mm);
  // A Gaussian in 128 levels a side: the KL optimum clips around 3 to 4.5
  // sigma, well inside its ~4.5-sigma extremes on 200,000 draws.
  EXPECT_GT(g.hi, 2.5f);
  EXPECT_LT(g.hi, mm.hi);
  EXPECT_FLOAT_EQ(g.lo, -g.hi);
  std::uniform_real_distribution<float> uniform(0.0f, 6.0f);
  std::vector<float> flat(200000);
  for (float& x : flat) x = uniform(rng);
  const Range u = entropy_range(flat, {0.0f, 6.0f});  // no tail: nothing worth clipping
  EXPECT_GT(u.hi, 5.8f);
  EXPECT_EQ(u.lo, 0.0f);
}

}  // namespace
}  // namespace kestrel::quantize

#include <gtest/gtest.h>

#include <cmath>

#include "core/dtype.h"
#include "core/tensor.h"

using namespace kestrel;

TEST(DType, HalfRoundTripsEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;  // inf/nan
    float f = half_to_float(uint16_t(h));
    EXPECT_EQ(float_to_half(f), uint16_t(h)) << "half bits " << h;
  }
}

TEST(DType, HalfRoundsToNearestEven) {
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 1.0f / 4096)), 1.0f);  // exactly halfway below: even
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                          // rounds to inf
  EXPECT_EQ(float_to_half(1e-8f), 0);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
}

TEST(Tensor, CastFloatToIntTruncatesAndReshapeShares) {
  Tensor t = Tensor::from_f32({2, 2}, {1.7f, -1.7f, 3.0f, 0.2f});
  Tensor i = t.cast(DType::Int64);
  EXPECT_EQ(i.to_i64(), (std::vector<int64_t>{1, -1, 3, 0}));
  Tensor r = t.reshaped({4});
  EXPECT_EQ(r.raw(), t.raw());
  EXPECT_THROW(t.reshaped({3}), Error);
}

TEST(Tensor, VectorHalfCastsMatchScalarConversions) {
  // 8-wide F16C paths plus a scalar tail, over values that round both ways.
  std::vector<float> v;
  for (int i = 0; i < 1003; ++i) v.push_back((i - 500) * 0.01234567f + (i % 7) * 1e-5f);
  v[3] = 70000.0f;  // overflows half
  v[5] = 1e-7f;     // half subnormal
  Tensor f = Tensor::from_f32({int64_t(v.size())}, v);
  Tensor h = f.cast(DType::Float16);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(h.data<uint16_t>()[i], float_to_half(v[i])) << i;
  Tensor back = h.cast(DType::Float32);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(back.data<float>()[i], half_to_float(h.data<uint16_t>()[i])) << i;
}

// The rotary tables' cache (ops/rotary_tables.h): each compiled graph keeps
// its own, computed once per frequency set and token count, and bounded.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/rotary_tables.h"

using namespace kestrel;

TEST(RotaryTables, AreTheAnglesInFloat32) {
  const std::vector<float> freq{1.0f, 0.01f};
  ops::RotaryTables t = ops::compute_rotary_tables(freq, 3);
  ASSERT_EQ(t.cos.size(), 6u);
  for (int p = 0; p < 3; ++p)
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(t.cos[size_t(p * 2 + j)], std::cos(float(p) * freq[size_t(j)]));
      EXPECT_EQ(t.sin[size_t(p * 2 + j)], std::sin(float(p) * freq[size_t(j)]));
    }
}

TEST(RotaryTables, TheCacheServesOneTablePerKeyAndStaysBounded) {
  ops::RotaryCache cache;
  const std::vector<float> freq{1.0f, 0.5f, 0.25f};
  auto a = cache.get(freq, 16);
  EXPECT_EQ(cache.get(freq, 16).get(), a.get()) << "the same frequencies and length: the same tables";
  EXPECT_NE(cache.get(freq, 17).get(), a.get());
  EXPECT_NE(cache.get({1.0f, 0.5f, 0.125f}, 16).get(), a.get());
  for (int64_t tokens = 100; tokens < 100 + int64_t(ops::RotaryCache::kKept) * 2; ++tokens) cache.get(freq, tokens);
  EXPECT_EQ(cache.size(), ops::RotaryCache::kKept) << "a stream of sequence lengths does not grow it";
  EXPECT_EQ(a->cos.size(), 16u * 3u) << "tables handed out outlive their eviction";
}

// The exact integer GEMM behind ConvInteger/MatMulInteger runs on the float
// SGEMM with a split operand: check it is exact at the extremes of the 8-bit
// range and across K blocks, against int64 arithmetic.
#include <gtest/gtest.h>

#include <random>

#include "ops/evaluate.h"

using namespace kestrel;

namespace {
Tensor matmul_integer(const Tensor& a, const Tensor& b, const Tensor& azp, const Tensor& bzp) {
  ir::Node n;
  n.op_type = "MatMulInteger";
  n.name = "mmi";
  n.opset = 10;
  n.inputs = {0, 1, 2, 3};
  n.outputs = {4};
  return ops::evaluate_node(n, {a, b, azp, bzp}, 2)[0];
}

Tensor u8(const Shape& shape, const std::vector<uint8_t>& v) {
  Tensor t(DType::UInt8, shape);
  std::copy(v.begin(), v.end(), t.data<uint8_t>());
  return t;
}
}  // namespace

TEST(IgemmExact, ExtremesAndLongSumsMatchInt64) {
  // K = 9000 spans three blocks of 4096; every product is -255 * 255 or mixed.
  const int64_t M = 5, K = 9000, N = 37;
  std::mt19937 rng(7);
  std::vector<uint8_t> av(size_t(M * K)), bv(size_t(K * N));
  for (size_t i = 0; i < av.size(); ++i) av[i] = i % 3 == 0 ? 255 : uint8_t(rng() & 255);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = i % 5 == 0 ? 0 : uint8_t(rng() & 255);
  for (int64_t k = 0; k < K; ++k) av[size_t(k)] = 255, bv[size_t(k * N)] = 0;  // row 0 x column 0: all -65025
  Tensor a = u8({M, K}, av), b = u8({K, N}, bv);
  Tensor azp = u8({}, {0}), bzp = u8({}, {255});
  Tensor c = matmul_integer(a, b, azp, bzp);
  ASSERT_EQ(c.dtype(), DType::Int32);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t want = 0;
      for (int64_t k = 0; k < K; ++k) want += int64_t(av[size_t(i * K + k)]) * (int64_t(bv[size_t(k * N + j)]) - 255);
      ASSERT_EQ(c.data<int32_t>()[i * N + j], want) << i << "," << j;
    }
  EXPECT_EQ(c.data<int32_t>()[0], -65025 * K);
}

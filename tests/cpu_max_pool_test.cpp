// The CPU backend's separable MaxPool (backends/cpu/pool.cpp) keeps the
// reference kernel's rule bit for bit where values tie or are NaN: the first
// in-bounds tap of the window (row-major) starts the maximum, and a later tap
// replaces it only when greater, so of +0 and -0 the first wins, and a NaN
// counts only as a window's first tap. (Random values are in the backend
// parity cases, tests/backend_ops.)
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "onnx_builders.h"
#include "runtime/session.h"

using namespace kestrel;
using namespace kestrel::test;

namespace {

std::string max_pool_model(int64_t k, int64_t stride, int64_t pad) {
  auto m = make_model(12);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 2, 9, 11});
  auto* n = add_node(g, "MaxPool", {"x"}, {"y"}, "pool");
  set_ints(n, "kernel_shape", {k, k});
  set_ints(n, "strides", {stride, stride});
  set_ints(n, "pads", {pad, pad, pad, pad});
  add_output(g, "y");
  return bytes_of(m);
}

Tensor run_with(const std::string& bytes, CpuKernels kernels, const Tensor& x) {
  SessionOptions o;
  o.backend = BackendChoice::Cpu;
  o.cpu_kernels = kernels;
  o.threads = 2;
  return Session::load_bytes(bytes.data(), bytes.size(), o)->run({{"x", x}})[0];
}

// The first plane: values from a few levels, so windows tie, and signed
// zeros. The second: -1 but for NaNs and one 3 just right of a NaN, so some
// windows start at a NaN (NaN out) and others reach the 3 through a row that
// starts at the NaN (3 out, where a row-wise maximum would have kept NaN
// for that row and given -1).
Tensor ties_zeros_and_nans() {
  Tensor x(DType::Float32, {1, 2, 9, 11});
  float* p = x.data<float>();
  for (int64_t i = 0; i < 99; ++i) p[i] = float((i * 7) % 3) - 2.0f;  // -2, -1, 0
  for (int64_t i = 0; i < 99; i += 5) p[i] = -0.0f;
  float* q = p + 99;
  std::fill(q, q + 99, -1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  q[4 * 11 + 4] = nan;
  q[4 * 11 + 5] = 3.0f;
  q[0] = q[8 * 11 + 10] = nan;
  return x;
}

}  // namespace

TEST(CpuMaxPool, TiesSignedZerosAndNaNsGiveTheReferencesBits) {
  const Tensor x = ties_zeros_and_nans();
  for (auto [k, stride, pad] : {std::array<int64_t, 3>{3, 1, 1}, {2, 2, 0}, {5, 1, 2}, {3, 2, 1}}) {
    const std::string bytes = max_pool_model(k, stride, pad);
    const Tensor want = run_with(bytes, CpuKernels::Reference, x);
    const Tensor got = run_with(bytes, CpuKernels::Fast, x);
    ASSERT_EQ(got.shape(), want.shape());
    int nans = 0;
    for (int64_t i = 0; i < want.numel(); ++i) nans += std::isnan(want.data<float>()[i]);
    EXPECT_GT(nans, 0) << "k " << k << ": no window starts at a NaN, so the NaN rule is not tested";
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0)
        << "kernel " << k << " stride " << stride << " pad " << pad;
  }
}

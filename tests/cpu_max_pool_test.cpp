// The CPU backend's MaxPool (backends/cpu/pool.cpp), direct or separable,
// planar or channels-last (MaxPoolChannelsLast), keeps the reference kernel's rule bit for bit where values tie or are NaN: the first
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

// MaxPool over x [1, 2, 9, width], or MaxPoolChannelsLast (com.kestrel) of
// the same window over x [1, 9, width, 2].
std::string max_pool_model(int64_t k, int64_t stride, int64_t pad, int64_t width, bool channels_last = false) {
  auto m = make_model(12);
  if (channels_last) {
    auto* os = m.add_opset_import();
    os->set_domain("com.kestrel");
    os->set_version(1);
  }
  auto* g = m.mutable_graph();
  if (channels_last) add_input(g, "x", {1, 9, width, 2});
  else add_input(g, "x", {1, 2, 9, width});
  auto* n = add_node(g, channels_last ? "MaxPoolChannelsLast" : "MaxPool", {"x"}, {"y"}, "pool");
  if (channels_last) n->set_domain("com.kestrel");
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
// for that row and given -1). Planes 40 wide put the NaNs in the middle of
// the runs of outputs the direct form computes as vectors.
Tensor ties_zeros_and_nans(int64_t width) {
  const int64_t plane = 9 * width;
  Tensor x(DType::Float32, {1, 2, 9, width});
  float* p = x.data<float>();
  for (int64_t i = 0; i < plane; ++i) p[i] = float((i * 7) % 3) - 2.0f;  // -2, -1, 0
  for (int64_t i = 0; i < plane; i += 5) p[i] = -0.0f;
  float* q = p + plane;
  std::fill(q, q + plane, -1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t c : {int64_t(4), width / 2 + 1}) {
    q[4 * width + c] = nan;
    q[4 * width + c + 1] = 3.0f;
  }
  q[0] = q[8 * width + width - 1] = nan;
  return x;
}

// [N, C, H, W] -> [N, H, W, C] or back.
Tensor permuted(const Tensor& t, bool to_channels_last) {
  const int64_t N = t.dim(0), A = t.dim(1), B = t.dim(2), C = t.dim(3);
  Tensor out(DType::Float32, to_channels_last ? Shape{N, B, C, A} : Shape{N, C, A, B});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t a = 0; a < A; ++a)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < C; ++c) {
          const float v = t.data<float>()[((n * A + a) * B + b) * C + c];
          if (to_channels_last) out.data<float>()[((n * B + b) * C + c) * A + a] = v;
          else out.data<float>()[((n * C + c) * A + a) * B + b] = v;
        }
  return out;
}

}  // namespace

TEST(CpuMaxPool, TiesSignedZerosAndNaNsGiveTheReferencesBits) {
  for (auto [k, stride, pad, width] : {std::array<int64_t, 4>{3, 1, 1, 11}, {2, 2, 0, 11}, {5, 1, 2, 11}, {3, 2, 1, 11},
                                       {3, 1, 1, 40}, {2, 2, 0, 40}, {3, 2, 1, 40}, {3, 3, 0, 40}}) {
    const Tensor x = ties_zeros_and_nans(width);
    const std::string bytes = max_pool_model(k, stride, pad, width);
    const Tensor want = run_with(bytes, CpuKernels::Reference, x);
    const Tensor got = run_with(bytes, CpuKernels::Fast, x);
    ASSERT_EQ(got.shape(), want.shape());
    int nans = 0;
    for (int64_t i = 0; i < want.numel(); ++i) nans += std::isnan(want.data<float>()[i]);
    EXPECT_GT(nans, 0) << "k " << k << ": no window starts at a NaN, so the NaN rule is not tested";
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0)
        << "kernel " << k << " stride " << stride << " pad " << pad << " width " << width;
  }
}

// The channels-last kernel on the same values: the bits of its own
// reference, and those of MaxPool's reference on the planar image.
TEST(CpuMaxPool, ChannelsLastTiesSignedZerosAndNaNsGiveTheReferencesBits) {
  for (auto [k, stride, pad, width] : {std::array<int64_t, 4>{3, 1, 1, 11}, {2, 2, 0, 11}, {5, 1, 2, 11}, {3, 2, 1, 11},
                                       {9, 1, 4, 40}, {2, 2, 0, 40}, {3, 2, 1, 40}, {3, 3, 0, 40}}) {
    const Tensor planar = ties_zeros_and_nans(width);
    const Tensor x = permuted(planar, true);
    const std::string bytes = max_pool_model(k, stride, pad, width, true);
    const Tensor want = run_with(bytes, CpuKernels::Reference, x);
    const Tensor got = run_with(bytes, CpuKernels::Fast, x);
    const Tensor onnx = permuted(run_with(max_pool_model(k, stride, pad, width), CpuKernels::Reference, planar), true);
    ASSERT_EQ(got.shape(), want.shape());
    ASSERT_EQ(onnx.shape(), want.shape());
    int nans = 0;
    for (int64_t i = 0; i < want.numel(); ++i) nans += std::isnan(want.data<float>()[i]);
    EXPECT_GT(nans, 0) << "k " << k << ": no window starts at a NaN, so the NaN rule is not tested";
    EXPECT_EQ(std::memcmp(want.raw(), onnx.raw(), want.nbytes()), 0)
        << "reference against MaxPool's: kernel " << k << " stride " << stride << " pad " << pad << " width " << width;
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0)
        << "kernel " << k << " stride " << stride << " pad " << pad << " width " << width;
  }
}

// Generated signal tensors: the Hann, Hamming and Blackman windows and the
// MelWeightMatrix filter bank (opset 17). Values are computed in double and
// converted to the requested output_datatype.
#include <cmath>
#include <numbers>

#include "ops/common.h"

namespace kestrel::ops {
namespace {

int64_t scalar_int(const KernelContext& ctx, int i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != 1 || dtype_is_float(t.dtype()))
    ctx.fail(what, " must be a single integer, got ", dtype_name(t.dtype()), " ", shape_str(t.shape()));
  return t.to_i64()[0];
}

double scalar_real(const KernelContext& ctx, int i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != 1) ctx.fail(what, " must be a single value, got ", shape_str(t.shape()));
  return double(t.to_f32()[0]);
}

// Writes `values` (computed in double) as output 0 of the node's output_datatype.
void emit(KernelContext& ctx, const Shape& shape, const std::vector<double>& values) {
  int64_t code = ctx.node.attr_i("output_datatype", int64_t(DType::Float32));
  DType to = DType(code);
  if (to == DType::Bool || to == DType::String || !dtype_supported(to))
    ctx.fail("output_datatype ", code, " is not a numeric type Kestrel supports");
  Tensor t(DType::Float64, shape);
  std::copy(values.begin(), values.end(), t.data<double>());
  ctx.set_output(0, to == DType::Float64 ? t : t.cast(to));
}

// Generalized cosine window a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), where
// N is the size when periodic and size - 1 when symmetric.
void cosine_window(KernelContext& ctx, double a0, double a1, double a2) {
  int64_t size = scalar_int(ctx, 0, "size");
  if (size < 0) ctx.fail("size must be non-negative, got ", size);
  bool periodic = ctx.node.attr_i("periodic", 1) != 0;
  double N = double(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    double t = N > 0 ? 2.0 * std::numbers::pi * double(n) / N : 0.0;
    w[size_t(n)] = a0 - a1 * std::cos(t) + a2 * std::cos(2.0 * t);
  }
  emit(ctx, {size}, w);
}

void run_hann(KernelContext& ctx) { cosine_window(ctx, 0.5, 0.5, 0.0); }
void run_hamming(KernelContext& ctx) { cosine_window(ctx, 25.0 / 46.0, 21.0 / 46.0, 0.0); }
void run_blackman(KernelContext& ctx) { cosine_window(ctx, 0.42, 0.5, 0.08); }

// Triangular filters spaced evenly on the mel scale between the edge
// frequencies, mapped onto the dft_length / 2 + 1 spectrogram bins, as ONNX's
// reference implementation computes them.
void run_mel_weight_matrix(KernelContext& ctx) {
  int64_t mels = scalar_int(ctx, 0, "num_mel_bins");
  int64_t dft_length = scalar_int(ctx, 1, "dft_length");
  int64_t rate = scalar_int(ctx, 2, "sample_rate");
  double lower = scalar_real(ctx, 3, "lower_edge_hertz"), upper = scalar_real(ctx, 4, "upper_edge_hertz");
  if (mels < 1 || dft_length < 1 || rate < 1)
    ctx.fail("num_mel_bins (", mels, "), dft_length (", dft_length, ") and sample_rate (", rate,
             ") must be positive");
  if (!(lower >= 0 && lower < upper))
    ctx.fail("edge frequencies must satisfy 0 <= lower (", lower, ") < upper (", upper, ")");
  const int64_t bins = dft_length / 2 + 1;
  auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low_mel = to_mel(lower), step = (to_mel(upper) - low_mel) / double(mels + 2);
  std::vector<int64_t> edge(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    double hz = 700.0 * (std::pow(10.0, (double(i) * step + low_mel) / 2595.0) - 1.0);
    edge[size_t(i)] = int64_t(std::floor(double(dft_length + 1) * hz / double(rate)));
    if (edge[size_t(i)] < 0 || edge[size_t(i)] >= bins)
      ctx.fail("upper_edge_hertz ", upper, " maps past the last of ", bins, " spectrogram bins for sample_rate ", rate);
  }
  std::vector<double> w(static_cast<size_t>(bins * mels), 0.0);
  for (int64_t m = 0; m < mels; ++m) {
    int64_t lo = edge[size_t(m)], mid = edge[size_t(m + 1)], hi = edge[size_t(m + 2)];
    if (mid == lo) {
      w[size_t(mid * mels + m)] = 1.0;
    } else {
      for (int64_t j = lo; j <= mid; ++j) w[size_t(j * mels + m)] = double(j - lo) / double(mid - lo);
    }
    for (int64_t j = mid; j < hi; ++j) w[size_t(j * mels + m)] = double(hi - j) / double(hi - mid);
  }
  emit(ctx, {bins, mels}, w);
}

}  // namespace

KESTREL_OP(HannWindow, {.min_opset = 17, .run = run_hann, .half_native = true});
KESTREL_OP(HammingWindow, {.min_opset = 17, .run = run_hamming, .half_native = true});
KESTREL_OP(BlackmanWindow, {.min_opset = 17, .run = run_blackman, .half_native = true});
KESTREL_OP(MelWeightMatrix, {.min_opset = 17, .run = run_mel_weight_matrix, .half_native = true});

}  // namespace kestrel::ops

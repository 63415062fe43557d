// DFT (opsets 17 and 20) and STFT (opset 17). Transforms run in double: an
// iterative radix-2 FFT for power-of-two lengths, otherwise a direct O(n^2)
// sum over a precomputed twiddle table.
#include <cmath>
#include <complex>
#include <numbers>

#include "ops/movement.h"

namespace kestrel::ops {
namespace {

using cd = std::complex<double>;

// A transform of one length and direction, reusable across many signals.
class Transform {
 public:
  Transform(int64_t n, bool inverse) : n_(n), inverse_(inverse), tw_(static_cast<size_t>(n)) {
    double sign = inverse ? 1.0 : -1.0;
    for (int64_t k = 0; k < n; ++k) tw_[size_t(k)] = std::polar(1.0, sign * 2.0 * std::numbers::pi * double(k) / double(n));
    pow2_ = n > 0 && (n & (n - 1)) == 0;
  }

  // In place on n values; the inverse is scaled by 1/n.
  void run(std::vector<cd>& x, std::vector<cd>& scratch) const {
    if (n_ == 0) return;
    if (pow2_) {
      fft(x);
    } else {
      scratch.assign(size_t(n_), cd(0, 0));
      for (int64_t k = 0; k < n_; ++k) {
        cd s(0, 0);
        for (int64_t j = 0; j < n_; ++j) s += x[size_t(j)] * tw_[size_t((k * j) % n_)];
        scratch[size_t(k)] = s;
      }
      x.swap(scratch);
    }
    if (inverse_)
      for (cd& v : x) v /= double(n_);
  }

 private:
  void fft(std::vector<cd>& x) const {
    for (int64_t i = 1, j = 0; i < n_; ++i) {  // bit-reversal permutation
      int64_t bit = n_ >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(x[size_t(i)], x[size_t(j)]);
    }
    for (int64_t len = 2; len <= n_; len <<= 1) {
      int64_t step = n_ / len;
      for (int64_t i = 0; i < n_; i += len)
        for (int64_t k = 0; k < len / 2; ++k) {
          cd u = x[size_t(i + k)], v = x[size_t(i + k + len / 2)] * tw_[size_t(k * step)];
          x[size_t(i + k)] = u + v;
          x[size_t(i + k + len / 2)] = u - v;
        }
    }
  }

  int64_t n_;
  bool inverse_, pow2_ = false;
  std::vector<cd> tw_;
};

int64_t optional_scalar(const KernelContext& ctx, int i, int64_t def, const char* what) {
  if (!ctx.has_input(i)) return def;
  std::vector<int64_t> v = input_ints(ctx, i, what);
  if (v.size() != 1) ctx.fail(what, " must be a single value, got ", v.size());
  return v[0];
}

// The last dim of a signal holds 1 (real) or 2 (real, imaginary) components.
int64_t components(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.rank() < 2 || (t.dim(-1) != 1 && t.dim(-1) != 2))
    ctx.fail(what, " must end in a dim of 1 (real) or 2 (complex), got ", shape_str(t.shape()));
  return t.dim(-1);
}

template <typename T>
void dft_typed(KernelContext& ctx, const Tensor& X, int axis, int64_t n_fft, bool inverse, bool onesided) {
  const int64_t comps = X.dim(-1), L = X.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= X.dim(i);
  for (int i = axis + 1; i < X.rank() - 1; ++i) inner *= X.dim(i);
  const int64_t n_out = onesided ? n_fft / 2 + 1 : n_fft;
  Shape out = X.shape();
  out[size_t(axis)] = n_out;
  out.back() = 2;
  Tensor& Y = ctx.output(0, X.dtype(), out);
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  Transform tr(n_fft, inverse);
  parallel_for(ctx, outer * inner, 1, [&](int64_t p) {
    int64_t o = p / inner, i = p % inner;
    std::vector<cd> v(static_cast<size_t>(n_fft)), scratch;
    for (int64_t l = 0; l < std::min(L, n_fft); ++l) {  // truncate or zero-pad to n_fft
      const T* e = x + ((o * L + l) * inner + i) * comps;
      v[size_t(l)] = cd(double(e[0]), comps == 2 ? double(e[1]) : 0.0);
    }
    tr.run(v, scratch);
    for (int64_t k = 0; k < n_out; ++k) {
      T* e = y + ((o * n_out + k) * inner + i) * 2;
      e[0] = T(v[size_t(k)].real());
      e[1] = T(v[size_t(k)].imag());
    }
  });
}

void run_dft(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  components(ctx, X, "input");
  const int r = X.rank();
  // The axis is an attribute (default 1) up to opset 19 and an input (default -2) from 20.
  int64_t axis = ctx.node.opset >= 20 ? optional_scalar(ctx, 2, -2, "axis") : ctx.node.attr_i("axis", 1);
  if (axis < -r || axis > r - 2) ctx.fail("axis ", axis, " is outside [", -r, ", ", r - 2, "] for input ", shape_str(X.shape()));
  if (axis < 0) axis += r;
  if (axis == r - 1) ctx.fail("axis ", axis, " is the complex-component dim of ", shape_str(X.shape()));
  int64_t n_fft = X.dim(int(axis));
  if (ctx.has_input(1) && ctx.input(1).numel() > 0) n_fft = optional_scalar(ctx, 1, n_fft, "dft_length");
  if (n_fft < 1) ctx.fail("dft_length must be positive, got ", n_fft);
  bool inverse = ctx.node.attr_i("inverse", 0) != 0, onesided = ctx.node.attr_i("onesided", 0) != 0;
  if (X.dtype() == DType::Float32) return dft_typed<float>(ctx, X, int(axis), n_fft, inverse, onesided);
  if (X.dtype() == DType::Float64) return dft_typed<double>(ctx, X, int(axis), n_fft, inverse, onesided);
  ctx.fail("supports float and double only, got ", dtype_name(X.dtype()));
}

template <typename T>
void stft_typed(KernelContext& ctx, const Tensor& S, int64_t step, const Tensor* window, int64_t frame, bool onesided) {
  const int64_t B = S.dim(0), L = S.dim(1), comps = S.dim(2);
  const int64_t frames = (L - frame) / step + 1, bins = onesided ? frame / 2 + 1 : frame;
  Tensor& Y = ctx.output(0, S.dtype(), {B, frames, bins, 2});
  std::vector<float> w = window ? window->to_f32() : std::vector<float>(size_t(frame), 1.f);
  const T* s = S.data<T>();
  T* y = Y.data<T>();
  Transform tr(frame, false);
  parallel_for(ctx, B * frames, 1, [&](int64_t p) {
    int64_t b = p / frames, f = p % frames;
    std::vector<cd> v(static_cast<size_t>(frame)), scratch;
    for (int64_t n = 0; n < frame; ++n) {
      const T* e = s + (b * L + f * step + n) * comps;
      v[size_t(n)] = cd(double(e[0]), comps == 2 ? double(e[1]) : 0.0) * double(w[size_t(n)]);
    }
    tr.run(v, scratch);
    for (int64_t k = 0; k < bins; ++k) {
      y[(p * bins + k) * 2] = T(v[size_t(k)].real());
      y[(p * bins + k) * 2 + 1] = T(v[size_t(k)].imag());
    }
  });
}

void run_stft(KernelContext& ctx) {
  const Tensor& S = ctx.input(0);
  if (S.rank() != 3) ctx.fail("signal must be [batch, length, 1 or 2], got ", shape_str(S.shape()));
  components(ctx, S, "signal");
  int64_t step = optional_scalar(ctx, 1, 0, "frame_step");
  if (step < 1) ctx.fail("frame_step must be positive, got ", step);
  const Tensor* window = ctx.has_input(2) && ctx.input(2).numel() > 0 ? &ctx.input(2) : nullptr;
  if (window && window->rank() != 1) ctx.fail("window must be 1-D, got ", shape_str(window->shape()));
  int64_t frame = optional_scalar(ctx, 3, window ? window->numel() : 0, "frame_length");
  if (!window && !ctx.has_input(3)) ctx.fail("needs a window or a frame_length");
  if (window && window->numel() != frame)
    ctx.fail("window has ", window->numel(), " values but frame_length is ", frame);
  if (frame < 1 || frame > S.dim(1))
    ctx.fail("frame_length ", frame, " must be in [1, ", S.dim(1), "] (the signal length)");
  bool onesided = ctx.node.attr_i("onesided", 1) != 0;
  if (S.dtype() == DType::Float32) return stft_typed<float>(ctx, S, step, window, frame, onesided);
  if (S.dtype() == DType::Float64) return stft_typed<double>(ctx, S, step, window, frame, onesided);
  ctx.fail("supports float and double only, got ", dtype_name(S.dtype()));
}

}  // namespace

KESTREL_OP(DFT, {.min_opset = 17, .run = run_dft});
KESTREL_OP(STFT, {.min_opset = 17, .run = run_stft});

}  // namespace kestrel::ops

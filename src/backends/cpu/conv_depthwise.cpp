#include "backends/cpu/conv_depthwise.h"

#include <algorithm>
#include <vector>

namespace kestrel::backends::cpu {
namespace {

// One output plane of a depthwise convolution (one input channel per output
// channel, 1-D or 2-D). Each kernel tap adds a scaled input row segment into
// the output row, so the inner loop is a contiguous (or strided) axpy.
void depthwise_plane_generic(const WindowGeom& g, const float* x, const float* w, float bias, float* y) {
  const Window2D v(g);
  const int64_t H = v.H, W = v.W, KH = v.KH, KW = v.KW, OH = v.OH, OW = v.OW;
  const int64_t SH = v.SH, SW = v.SW, DH = v.DH, DW = v.DW, PH = v.PH, PW = v.PW;
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* yr = y + oh * OW;
    std::fill_n(yr, OW, bias);
    for (int64_t kh = 0; kh < KH; ++kh) {
      int64_t ih = oh * SH - PH + kh * DH;
      if (ih < 0 || ih >= H) continue;
      const float* xr = x + ih * W;
      for (int64_t kw = 0; kw < KW; ++kw) {
        float wv = w[kh * KW + kw];
        int64_t iw0 = -PW + kw * DW;  // input column of output column 0
        int64_t lo = iw0 >= 0 ? 0 : std::min(OW, (-iw0 + SW - 1) / SW);
        int64_t hi = iw0 >= W ? 0 : std::min(OW, (W - iw0 + SW - 1) / SW);
        if (SW == 1) {
          const float* xs = xr + iw0;
          for (int64_t j = lo; j < hi; ++j) yr[j] += wv * xs[j];
        } else {
          for (int64_t j = lo; j < hi; ++j) yr[j] += wv * xr[iw0 + j * SW];
        }
      }
    }
  }
}


// 8 floats in one AVX register; aligned(4) allows unaligned loads through it.
typedef float v8 __attribute__((vector_size(32), aligned(4)));

// Output columns j..j+7 of tap row xs for stride S: xs[0], xs[S], ... xs[7S].
template <int S>
inline v8 load_strided(const float* xs) {
  if constexpr (S == 1) {
    return *reinterpret_cast<const v8*>(xs);
  } else {
    // xs[0..7] and xs[7..14]: the even elements, reading nothing past xs[14].
    v8 a = *reinterpret_cast<const v8*>(xs), b = *reinterpret_cast<const v8*>(xs + 7);
    return __builtin_shufflevector(a, b, 0, 2, 4, 6, 9, 11, 13, 15);
  }
}

// Narrow rows: stride-S (1 or 2), undilated 2-D depthwise convolution of one plane. The
// input is first copied into a zero-bordered buffer holding exactly the rows
// and columns the windows cover, so every tap is in bounds: outputs are then
// computed 16 at a time in two vector registers (one store per output instead
// of one per tap), with an overlapping last block for the row's remainder
// (recomputing a few outputs with the same values); rows narrower than 16 use
// a scalar loop.
template <int S>
void depthwise_plane_padded(const WindowGeom& g, const float* x, const float* w, float bias, float* y) {
  const int64_t H = g.in[0], W = g.in[1], KH = g.kernel[0], KW = g.kernel[1];
  const int64_t OH = g.out[0], OW = g.out[1], PH = g.pad_begin[0], PW = g.pad_begin[1];
  const int64_t SH = g.stride[0];
  const int64_t Hp = (OH - 1) * SH + KH, Wp = (OW - 1) * S + KW;  // rows/columns the windows read
  static thread_local std::vector<float> padded;
  padded.assign(size_t(Hp * Wp), 0.f);
  for (int64_t r = 0; r < Hp; ++r) {
    int64_t ih = r - PH;
    if (ih < 0 || ih >= H) continue;
    int64_t c0 = std::max<int64_t>(0, PW), c1 = std::min(Wp, W + PW);  // padded columns backed by input
    if (c1 > c0) std::copy(x + ih * W + (c0 - PW), x + ih * W + (c1 - PW), padded.data() + r * Wp + c0);
  }
  const float* xp = padded.data();
  constexpr int64_t B = 16;
  auto block = [&](const float* xr0, float* yr, int64_t at) {
    v8 a0 = {bias, bias, bias, bias, bias, bias, bias, bias}, a1 = a0;
    for (int64_t kh = 0; kh < KH; ++kh) {
      const float* xr = xr0 + kh * Wp + at * S;
      for (int64_t kw = 0; kw < KW; ++kw) {
        const float t = w[kh * KW + kw];
        const v8 wv = {t, t, t, t, t, t, t, t};
        a0 += wv * load_strided<S>(xr + kw);
        a1 += wv * load_strided<S>(xr + kw + 8 * S);
      }
    }
    *reinterpret_cast<v8*>(yr + at) = a0;
    *reinterpret_cast<v8*>(yr + at + 8) = a1;
  };
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* yr = y + oh * OW;
    const float* xr0 = xp + oh * SH * Wp;
    if (OW < B) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        float acc = bias;
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw) acc += w[kh * KW + kw] * xr0[kh * Wp + ow * S + kw];
        yr[ow] = acc;
      }
      continue;
    }
    int64_t ow = 0;
    for (; ow + B <= OW; ow += B) block(xr0, yr, ow);
    if (ow < OW) block(xr0, yr, OW - B);
  }
}

// Wide rows: stride-S (1 or 2), undilated 2-D depthwise rows read in place. Output columns whose whole
// window lies inside the row are computed 16 at a time in two vector
// registers (one store per output instead of one per tap); the few border
// columns skip the taps that fall outside, as do rows near the top and bottom.
template <int S>
void depthwise_plane_wide(const WindowGeom& g, const float* x, const float* w, float bias, float* y) {
  const int64_t H = g.in[0], W = g.in[1], KH = g.kernel[0], KW = g.kernel[1];
  const int64_t OH = g.out[0], OW = g.out[1], PH = g.pad_begin[0], PW = g.pad_begin[1];
  // Columns [lo, hi) have every tap inside the row.
  const int64_t lo = std::min(OW, (PW + S - 1) / S);
  int64_t hi = lo;
  while (hi < OW && hi * S - PW + KW <= W) ++hi;
  constexpr int64_t B = 16;
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* yr = y + oh * OW;
    const int64_t ih0 = oh * g.stride[0] - PH;
    const int64_t k0 = std::max<int64_t>(0, -ih0), k1 = std::min(KH, H - ih0);
    auto edge_column = [&](int64_t ow) {
      float acc = bias;
      for (int64_t kh = k0; kh < k1; ++kh) {
        const float* xr = x + (ih0 + kh) * W;
        for (int64_t kw = 0; kw < KW; ++kw) {
          int64_t iw = ow * S - PW + kw;
          if (iw >= 0 && iw < W) acc += w[kh * KW + kw] * xr[iw];
        }
      }
      yr[ow] = acc;
    };
    for (int64_t ow = 0; ow < lo; ++ow) edge_column(ow);
    // A block of 16 outputs at `at` reads up to input column (at+15)*S - PW + KW-1.
    auto block_fits = [&](int64_t at) { return at >= lo && at + B <= hi && (at + B - 1) * S - PW + KW - 1 < W; };
    auto block = [&](int64_t at) {
      v8 a0 = {bias, bias, bias, bias, bias, bias, bias, bias}, a1 = a0;
      for (int64_t kh = k0; kh < k1; ++kh) {
        const float* xr = x + (ih0 + kh) * W + at * S - PW;
        for (int64_t kw = 0; kw < KW; ++kw) {
          const float t = w[kh * KW + kw];
          const v8 wv = {t, t, t, t, t, t, t, t};
          a0 += wv * load_strided<S>(xr + kw);
          a1 += wv * load_strided<S>(xr + kw + 8 * S);
        }
      }
      *reinterpret_cast<v8*>(yr + at) = a0;
      *reinterpret_cast<v8*>(yr + at + 8) = a1;
    };
    int64_t ow = lo;
    for (; block_fits(ow); ow += B) block(ow);
    // The remainder: one more block ending at hi, overlapping the last (it
    // recomputes a few outputs with the same values), when it fits.
    if (ow < hi && block_fits(hi - B)) {
      block(hi - B);
      ow = hi;
    }
    for (; ow < OW; ++ow) edge_column(ow);
  }
}

// Rows of at least this many outputs run in place (their few border columns
// are cheap); narrower ones pay for the padded copy to keep every column in
// vector blocks.
constexpr int64_t kWideRow = 48;

template <int S>
void depthwise_plane_strided(const WindowGeom& g, const float* x, const float* w, float bias, float* y) {
  if (g.out[1] >= kWideRow) return depthwise_plane_wide<S>(g, x, w, bias, y);
  depthwise_plane_padded<S>(g, x, w, bias, y);
}

}  // namespace

void depthwise_plane(const WindowGeom& g, const float* x, const float* w, float bias, float* y) {
  bool plain = g.nd == 2 && g.dil[0] == 1 && g.dil[1] == 1;
  if (plain && g.stride[1] == 1) return depthwise_plane_strided<1>(g, x, w, bias, y);
  if (plain && g.stride[1] == 2) return depthwise_plane_strided<2>(g, x, w, bias, y);
  depthwise_plane_generic(g, x, w, bias, y);
}

}  // namespace kestrel::backends::cpu

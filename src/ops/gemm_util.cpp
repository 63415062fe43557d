#include "ops/gemm_util.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace kestrel::ops {

namespace {
// 2-D windows (1-D runs as H = 1): rows of output positions are contiguous
// runs of input, so stride-1 rows copy straight.
template <typename T>
void im2col_2d(const WindowGeom& g, const T* x, int64_t channels, int64_t o0, int64_t o1, T* col) {
  const Window2D v(g);
  const int64_t H = v.H, W = v.W, KH = v.KH, KW = v.KW, OW = v.OW;
  const int64_t SH = v.SH, SW = v.SW, DH = v.DH, DW = v.DW, PH = v.PH, PW = v.PW;
  const int64_t ncols = o1 - o0, plane = H * W, kstride = KH * KW * ncols;
  // Runs of positions within one output row share, for each kernel offset,
  // the input row and the in-bounds columns [lo, hi): work those out once
  // per run and offset, then copy every channel (tiny 1-D convolutions with
  // many channels spend their time here otherwise).
  for (int64_t o = o0; o < o1;) {
    const int64_t oh = o / OW, ow = o % OW;
    const int64_t run = std::min(OW - ow, o1 - o);
    for (int64_t kh = 0; kh < KH; ++kh) {
      const int64_t ih = oh * SH - PH + kh * DH;
      const bool row_inside = ih >= 0 && ih < H;
      for (int64_t kw = 0; kw < KW; ++kw) {
        T* d = col + (kh * KW + kw) * ncols + (o - o0);
        const int64_t iw0 = ow * SW - PW + kw * DW;
        int64_t lo = 0, hi = 0;
        if (row_inside) {
          lo = iw0 >= 0 ? 0 : std::min(run, (-iw0 + SW - 1) / SW);
          hi = std::max(lo, iw0 >= W ? 0 : std::min(run, (W - iw0 + SW - 1) / SW));
        }
        const int64_t first = ih * W + iw0;  // input offset of position 0 of the run
        for (int64_t c = 0; c < channels; ++c, d += kstride) {
          std::fill_n(d, lo, T(0));
          if (SW == 1) {
            if (hi > lo) std::memcpy(d + lo, x + c * plane + first + lo, size_t(hi - lo) * sizeof(T));
          } else {
            for (int64_t j = lo; j < hi; ++j) d[j] = x[c * plane + first + j * SW];
          }
          std::fill(d + hi, d + run, T(0));
        }
      }
    }
    o += run;
  }
}

// Any spatial rank: odometers over kernel offsets and output positions.
template <typename T>
void im2col_nd(const WindowGeom& g, const T* x, int64_t channels, int64_t o0, int64_t o1, T* col) {
  int nd = g.nd;
  int64_t ks = g.kernel_size(), insz = g.in_size(), ncols = o1 - o0;
  std::vector<int64_t> kidx(static_cast<size_t>(nd)), oidx(static_cast<size_t>(nd));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t k = 0; k < ks; ++k) {
      int64_t r = k;
      for (int d = nd - 1; d >= 0; --d) kidx[size_t(d)] = r % g.kernel[size_t(d)], r /= g.kernel[size_t(d)];
      T* dst = col + (c * ks + k) * ncols;
      for (int64_t o = o0; o < o1; ++o) {
        int64_t q = o, off = 0;
        bool inside = true;
        for (int d = nd - 1; d >= 0; --d) oidx[size_t(d)] = q % g.out[size_t(d)], q /= g.out[size_t(d)];
        for (int d = 0; d < nd; ++d) {
          size_t u = size_t(d);
          int64_t i = oidx[u] * g.stride[u] - g.pad_begin[u] + kidx[u] * g.dil[u];
          if (i < 0 || i >= g.in[u]) {
            inside = false;
            break;
          }
          off = off * g.in[u] + i;
        }
        dst[o - o0] = inside ? x[c * insz + off] : T(0);
      }
    }
}
}  // namespace

template <typename T>
void im2col(const WindowGeom& g, const T* x, int64_t channels, int64_t o0, int64_t o1, T* col) {
  if (g.nd <= 2)
    im2col_2d(g, x, channels, o0, o1, col);
  else
    im2col_nd(g, x, channels, o0, o1, col);
}
template void im2col<float>(const WindowGeom&, const float*, int64_t, int64_t, int64_t, float*);
template void im2col<int32_t>(const WindowGeom&, const int32_t*, int64_t, int64_t, int64_t, int32_t*);

void im2row(const WindowGeom& g, const float* x, int64_t channels, int64_t o0, int64_t o1, float* rows) {
  if (g.nd > 2) fail("im2row takes 1-D and 2-D windows, got ", g.nd, "-D");
  const Window2D v(g);
  const int64_t K = channels * v.KH * v.KW, plane = v.H * v.W;
  for (int64_t o = o0; o < o1; ++o) {
    const int64_t oh = o / v.OW, ow = o % v.OW, iw0 = ow * v.SW - v.PW;
    float* r = rows + (o - o0) * K;
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t kh = 0; kh < v.KH; ++kh, r += v.KW) {
        const int64_t ih = oh * v.SH - v.PH + kh * v.DH;
        const bool row_inside = ih >= 0 && ih < v.H;
        const float* in = x + c * plane + (row_inside ? ih : 0) * v.W;
        if (v.DW == 1 && v.KW >= 16 && row_inside && iw0 >= 0 && iw0 + v.KW <= v.W) {  // one long run
          std::copy(in + iw0, in + iw0 + v.KW, r);
          continue;
        }
        // Branch-free: most windows are a few taps (a call or a branch per
        // tap costs more than the copy); padding reads as 0.
        for (int64_t kw = 0; kw < v.KW; ++kw) {
          const int64_t iw = iw0 + kw * v.DW;
          const bool inside = row_inside && iw >= 0 && iw < v.W;
          r[kw] = inside ? in[inside ? iw : 0] : 0.f;
        }
      }
  }
}

namespace {
// 2-D (and 1-D) col2im mirroring im2col_2d: each column row adds back into
// contiguous (or strided) runs of an input row.
void col2im_2d(const WindowGeom& g, const float* col, int64_t channels, int64_t o0, int64_t o1, float* x) {
  const Window2D v(g);
  const int64_t H = v.H, W = v.W, KH = v.KH, KW = v.KW, OW = v.OW;
  const int64_t SH = v.SH, SW = v.SW, DH = v.DH, DW = v.DW, PH = v.PH, PW = v.PW;
  int64_t ncols = o1 - o0;
  for (int64_t c = 0; c < channels; ++c) {
    float* xc = x + c * H * W;
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        const float* src = col + ((c * KH + kh) * KW + kw) * ncols;
        int64_t o = o0;
        while (o < o1) {
          int64_t oh = o / OW, ow = o % OW;
          int64_t run = std::min(OW - ow, o1 - o);
          int64_t ih = oh * SH - PH + kh * DH;
          if (ih >= 0 && ih < H) {
            float* xr = xc + ih * W;
            const float* s = src + (o - o0);
            int64_t iw0 = ow * SW - PW + kw * DW;
            int64_t lo = iw0 >= 0 ? 0 : std::min(run, (-iw0 + SW - 1) / SW);
            int64_t hi = iw0 >= W ? 0 : std::min(run, (W - iw0 + SW - 1) / SW);
            for (int64_t j = lo; j < hi; ++j) xr[iw0 + j * SW] += s[j];
          }
          o += run;
        }
      }
  }
}
}  // namespace

void col2im(const WindowGeom& g, const float* col, int64_t channels, int64_t o0, int64_t o1, float* x) {
  if (g.nd <= 2) return col2im_2d(g, col, channels, o0, o1, x);
  int nd = g.nd;
  int64_t ks = g.kernel_size(), insz = g.in_size(), ncols = o1 - o0;
  std::vector<int64_t> kidx(static_cast<size_t>(nd)), oidx(static_cast<size_t>(nd));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t k = 0; k < ks; ++k) {
      int64_t r = k;
      for (int d = nd - 1; d >= 0; --d) kidx[size_t(d)] = r % g.kernel[size_t(d)], r /= g.kernel[size_t(d)];
      const float* src = col + (c * ks + k) * ncols;
      r = o0;
      for (int d = nd - 1; d >= 0; --d) oidx[size_t(d)] = r % g.out[size_t(d)], r /= g.out[size_t(d)];
      for (int64_t o = 0; o < ncols; ++o) {
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < nd; ++d) {
          size_t u = size_t(d);
          int64_t i = oidx[u] * g.stride[u] - g.pad_begin[u] + kidx[u] * g.dil[u];
          if (i < 0 || i >= g.in[u]) {
            inside = false;
            break;
          }
          off = off * g.in[u] + i;
        }
        if (inside) x[c * insz + off] += src[o];
        for (int d = nd - 1; d >= 0; --d) {  // advance the output odometer
          if (++oidx[size_t(d)] < g.out[size_t(d)]) break;
          oidx[size_t(d)] = 0;
        }
      }
    }
}

}  // namespace kestrel::ops

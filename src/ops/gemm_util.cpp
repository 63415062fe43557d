#include "ops/gemm_util.h"

#include "ops/igemm_exact.h"
#include "ops/narrow_gemm.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace kestrel::ops {

namespace {

// oneDNN's SGEMM (row-major). It threads with OpenMP: called from inside one
// of Kestrel's parallel loops it stays on the calling thread; called outside,
// it uses the run's thread count, which the executor sets as the OpenMP
// default for the calling thread.
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
          int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // nothing to multiply: C = beta * C
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0 ? 0.f : beta * C[i * ldc + j];
    return;
  }
  // (On one thread: large narrow products stay with oneDNN's threads.)
  const bool one_thread = M * N * K < (int64_t(1) << 21) || omp_in_parallel();
  if (!ta && alpha == 1.f && beta == 0.f && one_thread && narrow_gemm(tb, M, N, K, A, lda, B, ldb, C, ldc)) return;
  // A small product finishes before a team of threads would have started:
  // run it on the calling thread (matters for recurrent steps and tiny models
  // on many-core hosts).
  const bool small = M * N * K < (int64_t(1) << 18) && !omp_in_parallel();
  const int team = small ? omp_get_max_threads() : 1;
  if (small) omp_set_num_threads(1);
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (small) omp_set_num_threads(team);
  if (st != dnnl_success) fail("oneDNN sgemm failed (status ", int(st), ") for M=", M, " N=", N, " K=", K);
}
}  // namespace

void sgemm(const KernelContext& ctx, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  (void)ctx;  // the thread count reaches oneDNN through OpenMP's default (see gemm above)
  gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void sgemm_serial(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                  const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void sgemm_batched(const KernelContext& ctx, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A,
                   int64_t lda, const int64_t* a_off, const float* B, int64_t ldb, const int64_t* b_off, float* C,
                   int64_t ldc, const int64_t* c_off, int64_t batch) {
  if (batch == 1 || M * N * K >= (1 << 21)) {
    for (int64_t b = 0; b < batch; ++b)
      sgemm(ctx, ta, tb, M, N, K, 1.f, A + a_off[b], lda, B + b_off[b], ldb, 0.f, C + c_off[b], ldc);
    return;
  }
  parallel_for(ctx, batch, 1, [&](int64_t b) {
    sgemm_serial(ta, tb, M, N, K, 1.f, A + a_off[b], lda, B + b_off[b], ldb, 0.f, C + c_off[b], ldc);
  });
}

void igemm(const KernelContext& ctx, int64_t M, int64_t N, int64_t K, const int32_t* A, const int32_t* B,
           int32_t* C) {
  // Exact on the float GEMM (see igemm_exact.h): split A once, widen B to
  // float, and give each thread a block of columns.
  SplitOperand a = split_operand(A, M, K);
  std::vector<float> b(static_cast<size_t>(K * N));
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(B[i]);
  const int64_t cols = std::max<int64_t>(64, (N + ctx.threads() - 1) / ctx.threads());
  parallel_for(ctx, (N + cols - 1) / cols, 1, [&](int64_t t) {
    int64_t j0 = t * cols, n = std::min(cols, N - j0);
    igemm_exact_serial(a, 0, M, n, b.data() + j0, N, C + j0, N);
  });
}

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

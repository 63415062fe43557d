// The CPU backend's Softmax over float32: the reference's steps
// (softmax_kernels.inc) with a vectorized exponential and float32 sums, on
// the session's threads for every layout. The reference runs one scalar
// std::exp a value, and an axis other than the last as one task per outer
// index: YOLOv8's box decoding (Softmax over axis 1 of [1, 16, 4, 8400]) was
// one task of 537,600 exponentials, 2.5 ms on one core. LogSoftmax, Hardmax
// and float64 run the reference (ops/softmax.cpp).
#include <algorithm>
#include <vector>

#include "backends/cpu/fast_kernels.h"
#include "core/cpu_isa.h"
#include "core/cpu_isa_target.h"
#include "ops/common.h"
#include "ops/elementwise.h"
#include "ops/softmax.h"

namespace kestrel::backends::cpu {

namespace baseline_isa {
#include "backends/cpu/softmax_kernels.inc"
}  // namespace baseline_isa
KESTREL_ISA_AVX2_BEGIN
namespace avx2_isa {
#include "backends/cpu/softmax_kernels.inc"
}  // namespace avx2_isa
KESTREL_ISA_END

namespace {

// Columns a task takes where the op runs down an axis other than the last:
// two scratch rows of them stay in L1 beside a few rows of data.
constexpr int64_t kColumns = 256;
// Rows of the last axis up to this long run transposed, kColumns at a time.
constexpr int64_t kShortRow = 8;

void run_softmax(ops::KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.dtype() != DType::Float32) return run_reference_kernel(ctx);
  const ops::SoftmaxLayout l = ops::softmax_layout(ctx, X);
  Tensor& Y = ctx.output(0, X.dtype(), X.shape());
  if (X.numel() == 0) return;
  const float* x = X.data<float>();
  float* y = Y.data<float>();
  const bool avx2 = cpu_isa() >= CpuIsa::Avx2;
  if (l.inner == 1 && l.n <= kShortRow) {
    // Short rows (UltraFace's scores: 4,420 rows of 2) a block at a time as
    // the columns of a transposed copy, so the exponentials run across rows
    // in vectors; one row at a time, its loop overheads cost 5 ns a row
    // (0.05 ms of UltraFace's 2.5 at 1 thread). The same steps in the same
    // order: the same bits.
    const int64_t blocks = ops::ceil_div(l.outer, kColumns);
    ops::parallel_for(ctx, blocks, 1 + (1 << 14) / (kColumns * l.n), [&](int64_t b) {
      const int64_t o0 = b * kColumns, w = std::min(kColumns, l.outer - o0), n = l.n;
      float xt[kShortRow * kColumns], yt[kShortRow * kColumns], m[kColumns], sum[kColumns];
      const float* xb = x + o0 * n;
      float* yb = y + o0 * n;
      for (int64_t r = 0; r < w; ++r)
        for (int64_t k = 0; k < n; ++k) xt[k * kColumns + r] = xb[r * n + k];
      // (GCC cannot see that the columns read, w of n rows, are the ones
      // written above, and warns of the rest of the buffers.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
      if (avx2) avx2_isa::softmax_columns(xt, yt, n, kColumns, w, m, sum);
      else baseline_isa::softmax_columns(xt, yt, n, kColumns, w, m, sum);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
      for (int64_t r = 0; r < w; ++r)
        for (int64_t k = 0; k < n; ++k) yb[r * n + k] = yt[k * kColumns + r];
    });
    return;
  }
  if (l.inner == 1) {
    ops::parallel_for(ctx, l.outer, 1 + (1 << 14) / std::max<int64_t>(1, l.n), [&](int64_t o) {
      if (avx2) avx2_isa::softmax_row(x + o * l.n, y + o * l.n, l.n);
      else baseline_isa::softmax_row(x + o * l.n, y + o * l.n, l.n);
    });
    return;
  }
  const int64_t chunks = ops::ceil_div(l.inner, kColumns), per = l.n * l.inner;
  ops::parallel_for(ctx, l.outer * chunks, 1 + (1 << 14) / std::max<int64_t>(1, l.n * kColumns), [&](int64_t t) {
    const int64_t o = t / chunks, c0 = (t % chunks) * kColumns, w = std::min(kColumns, l.inner - c0);
    float m[kColumns], sum[kColumns];
    const float* xb = x + o * per + c0;
    float* yb = y + o * per + c0;
    if (avx2) avx2_isa::softmax_columns(xb, yb, l.n, l.inner, w, m, sum);
    else baseline_isa::softmax_columns(xb, yb, l.n, l.inner, w, m, sum);
  });
}

}  // namespace

KESTREL_CPU_KERNEL(Softmax, {.min_opset = 1, .run = run_softmax});

}  // namespace kestrel::backends::cpu

// The CPU backend's fast Conv, ConvInteger and QLinearConv (its kernels in
// qlinear_conv.cpp, falling back to the exact int32 convolution here; the
// reference kernels are in ops/conv.cpp). A residual Add the backend fused
// (residual_fusion.h) is added with the bias, before the activation. Float
// paths: depthwise layers run their direct kernel (conv_depthwise.h); the
// layers direct_conv.h suits (windows wider than 1x1 on maps that fill its
// tiles) run that; 1x1 stride-1 ones are one GEMM on the input as is; the
// rest is im2col in bounded chunks of output positions followed by SGEMM.
#include <algorithm>
#include <cstring>

#include "backends/cpu/conv_depthwise.h"
#include "backends/cpu/conv_int32.h"
#include "backends/cpu/conv_weight_packing.h"
#include "backends/cpu/direct_conv.h"
#include "backends/cpu/fast_kernels.h"
#include "backends/cpu/fast_products.h"
#include "backends/cpu/qlinear_conv.h"
#include "backends/cpu/residual_fusion.h"
#include "backends/cpu/igemm_exact.h"
#include "ops/conv.h"
#include "ops/epilogue.h"
#include "ops/gemm_util.h"

namespace kestrel::backends::cpu {
namespace {

using namespace ops;

// Column buffer budget in elements: keeps the im2col chunk cache-sized.
constexpr int64_t kColBudget = 1 << 19;

// The residual a fused Add adds to the output before the activation
// (residual_fusion.h), or null. It has the output's shape: the fusion takes
// only Adds of equal shapes.
const float* residual(const KernelContext& ctx, const Tensor& Y) {
  const int64_t at = ctx.node.attr_i(kResidualAttr, -1);
  if (at < 0) return nullptr;
  const Tensor& r = ctx.input(int(at));
  if (r.dtype() != DType::Float32 || r.shape() != Y.shape())
    ctx.fail("the fused residual is ", dtype_name(r.dtype()), " ", shape_str(r.shape()), ", not float32 ",
             shape_str(Y.shape()), " as the output");
  return r.data<float>();
}

// The weights packed at load for the direct convolution
// (conv_weight_packing.h), or null where they were not (or do not fit this
// Conv's shape: then the kernel packs them itself).
const float* packed_weights(const KernelContext& ctx, const ConvShape& s) {
  const int64_t at = ctx.node.attr_i(kPackedWeightsAttr, -1);
  if (at < 0 || !ctx.has_input(int(at))) return nullptr;
  const Tensor& p = ctx.input(int(at));
  const int64_t blocks = (s.Mg + kPackRows - 1) / kPackRows;
  const bool fits = p.dtype() == DType::Float32 && p.numel() == s.group * blocks * s.Cg * s.g.kernel_size() * kPackRows;
  return fits ? p.data<float>() : nullptr;
}

void run_conv(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& Wt = ctx.input(1);
  ConvShape s = conv_shape(ctx, X, Wt);
  const WindowGeom& g = s.g;
  const float* bias = conv_float_operands(ctx, s);
  Tensor& Y = ctx.output(0, DType::Float32, conv_out_shape(s));
  const int64_t IS = g.in_size(), OS = g.out_size(), KS = g.kernel_size();
  const float* x = X.data<float>();
  const float* w = Wt.data<float>();
  float* y = Y.data<float>();
  if (Y.numel() == 0) return;

  const Epilogue epi = Epilogue::of(ctx.node);  // a fused activation, if any
  const float* res = residual(ctx, Y);            // a fused residual Add, if any
  // Depthwise (channel multiplier Mg). A single-channel input (group 1) is
  // better served by one GEMM over all output channels.
  if (s.Cg == 1 && s.group > 1 && g.nd <= 2) {
    parallel_for(ctx, s.N * s.M, 1, [&](int64_t p) {
      int64_t n = p / s.M, m = p % s.M;
      depthwise_plane(g, x + (n * s.C + m / s.Mg) * IS, w + m * KS, bias ? bias[m] : 0.f, y + p * OS,
                      {res ? res + p * OS : nullptr, &epi});
    });
    return;
  }
  if (direct_conv_suits(s)) return direct_conv(ctx.threads(), s, x, w, packed_weights(ctx, s), bias, res, epi, y);

  // GEMM paths: each task multiplies one chunk of output positions on its own
  // thread, then adds the bias and applies the activation while the chunk is
  // still in cache. 1x1 stride-1 convolutions read the input in place; the
  // others gather their windows first (im2col).
  bool pointwise = KS == 1;
  for (int d = 0; d < g.nd; ++d)
    pointwise = pointwise && g.stride[size_t(d)] == 1 && g.pad_begin[size_t(d)] == 0 && g.pad_end[size_t(d)] == 0;
  const int64_t K = s.Cg * KS;
  // 1x1 layers on small maps (13x13, 26x26) split over output channels
  // rather than positions: oneDNN's product on a ragged slice of the
  // positions runs slower than on all of them (YOLOX-nano's [1,512,13,13]
  // -> 256 at 2 threads: 0.241 -> 0.219 ms).
  const bool by_rows = pointwise && OS <= 1024 && s.Mg >= 32 * ctx.threads();
  const int64_t per_thread = by_rows ? OS : (OS + ctx.threads() - 1) / ctx.threads();
  const int64_t budget = pointwise ? kColBudget * 4 : kColBudget;  // no column copy: larger chunks pay
  const int64_t chunk = std::min(OS, std::max<int64_t>(16, std::min(budget / std::max<int64_t>(K, 1), per_thread)));
  const int64_t nchunks = (OS + chunk - 1) / chunk;
  // Few output positions (a 1-D conv over a short signal) leave threads idle
  // while one of them streams all the weights: split the output channels too,
  // in blocks of at least 32 rows (each block gathers its own columns).
  // Only worth it past ~2M multiply-adds: below that, waking a team of
  // threads costs more than it saves (Silero VAD's convolutions on 16 cores).
  const int64_t tasks = s.N * s.group * nchunks;
  const bool big = s.N * s.M * OS * K >= (int64_t(1) << 21);
  const int64_t mparts = tasks >= ctx.threads() || !big
                             ? 1
                             : std::clamp<int64_t>(std::min(ctx.threads() / tasks, s.Mg / 32), 1, s.Mg);
  const int64_t mblock = (s.Mg + mparts - 1) / mparts;
  parallel_for(ctx, tasks * mparts, 1, [&](int64_t task) {
    static thread_local std::vector<float> col;
    const int64_t t = task / mparts, m0 = (task % mparts) * mblock, m1 = std::min(s.Mg, m0 + mblock);
    if (m0 >= m1) return;
    int64_t ng = t / nchunks, o0 = (t % nchunks) * chunk, o1 = std::min(OS, o0 + chunk), nc = o1 - o0;
    int64_t n = ng / s.group, gi = ng % s.group;
    const float* xg = x + (n * s.C + gi * s.Cg) * IS;
    const float* b = xg + o0;
    int64_t ldb = IS;
    // A few positions (a 1-D conv over a short signal) gather each window as
    // a row: the narrow GEMM wants the positions contiguous in K.
    const bool as_rows = !pointwise && nc <= kNarrowPositionsAtMost && g.nd <= 2;
    if (!pointwise) {
      col.resize(size_t(K * nc));
      if (as_rows) im2row(g, xg, s.Cg, o0, o1, col.data());
      else im2col(g, xg, s.Cg, o0, o1, col.data());
      b = col.data();
      ldb = as_rows ? K : nc;
    }
    float* yc = y + (n * s.M + gi * s.Mg + m0) * OS + o0;
    fast_sgemm(false, as_rows, m1 - m0, nc, K, 1.f, w + (gi * s.Mg + m0) * K, K, b, ldb, 0.f, yc, OS);
    for (int64_t m = 0; m < m1 - m0; ++m)
      epi.finish(yc + m * OS, nc, bias ? bias + gi * s.Mg + m0 + m : nullptr,
                 res ? res + (n * s.M + gi * s.Mg + m0 + m) * OS + o0 : nullptr);
  });
}

}  // namespace

// The exact int32 convolution (ops/conv.h) on oneDNN's u8 x s8 GEMM where
// it is exact and the operands fit, else on the float GEMM (igemm_exact.h):
// the weights prepared once, and chunks of output positions gathered and
// multiplied per thread as in Conv.
Tensor conv_int32(const KernelContext& ctx, const ConvShape& s, const Tensor& X, const Tensor& Wt, const Tensor* xzp,
                  const Tensor* wzp) {
  const WindowGeom& g = s.g;
  ConvInt32Operands o = conv_int32_operands(ctx, s, X, Wt, xzp, wzp);
  Tensor Y(DType::Int32, conv_out_shape(s));
  if (Y.numel() == 0) return Y;
  const int64_t IS = g.in_size(), OS = g.out_size(), KS = g.kernel_size(), K = s.Cg * KS;
  int32_t* y = Y.data<int32_t>();
  const int64_t per_thread = (OS + ctx.threads() - 1) / ctx.threads();
  const int64_t chunk = std::min(OS, std::max<int64_t>(16, std::min(kColBudget / std::max<int64_t>(K, 1), per_thread)));
  const int64_t nchunks = (OS + chunk - 1) / chunk;
  // On oneDNN's u8 x s8 GEMM where it is exact and the operands fit
  // (fast_products.h): the weights shifted to u8 once, each chunk's columns
  // gathered as for the float GEMM and then shifted to s8 (padding is a zero
  // of x - zx, so the shift comes after the gather). Else the weights split
  // once for the exact float GEMM.
  int32_t ao = 0, bo = 0;
  const auto [wmin, wmax] = std::minmax_element(o.w.begin(), o.w.end());
  const auto [xmin, xmax] = std::minmax_element(o.x.begin(), o.x.end());
  const bool u8s8 = !o.w.empty() && !o.x.empty() &&
                    u8s8_offsets(*wmin, *wmax, int32_t(std::min(*xmin, 0.f)), int32_t(std::max(*xmax, 0.f)), ao, bo);
  std::vector<uint8_t> wu;
  SplitOperand ws;
  if (u8s8) {
    wu.resize(o.w.size());
    for (size_t i = 0; i < wu.size(); ++i) wu[i] = uint8_t(o.w[i] + ao);
  } else {
    ws = split_operand(o.w.data(), s.M, K);
  }
  parallel_for(ctx, s.N * s.group * nchunks, 1, [&](int64_t t) {
    static thread_local std::vector<float> col;
    static thread_local std::vector<int8_t> col8;
    int64_t ng = t / nchunks, o0 = (t % nchunks) * chunk, o1 = std::min(OS, o0 + chunk), nc = o1 - o0;
    int64_t n = ng / s.group, gi = ng % s.group;
    col.resize(size_t(K * nc));
    im2col(g, o.x.data() + (n * s.C + gi * s.Cg) * IS, s.Cg, o0, o1, col.data());
    int32_t* out = y + (n * s.M + gi * s.Mg) * OS + o0;
    if (!u8s8) {
      igemm_exact_serial(ws, gi * s.Mg, s.Mg, nc, col.data(), nc, out, OS);
      return;
    }
    col8.resize(col.size());
    for (size_t i = 0; i < col.size(); ++i) col8[i] = int8_t(int32_t(col[i]) + bo);
    gemm_u8s8(s.Mg, nc, K, wu.data() + gi * s.Mg * K, ao, col8.data(), nc, bo, out, OS);
  });
  return Y;
}


KESTREL_CPU_KERNEL(Conv, {.min_opset = 1, .run = run_conv});
KESTREL_CPU_KERNEL(ConvInteger, {.min_opset = 10, .run = run_conv_integer_8bit});
KESTREL_CPU_KERNEL(QLinearConv, {.min_opset = 10, .run = run_qlinear_conv_8bit});

}  // namespace kestrel::backends::cpu

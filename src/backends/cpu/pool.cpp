// The CPU backend's MaxPool for float32 images (2-D, undilated, without the
// Indices output), planar and channels-last (MaxPoolChannelsLast,
// ops/pool.cpp), with the reference's tie rule bit for bit (the first
// in-bounds tap of a window, row-major, starts the maximum; a later one
// replaces it only when greater). Windows of up to kDirectTaps taps run
// directly: each output's taps in that order, one vectorized pass per tap,
// so ties and NaNs come out as the reference has them. Larger windows
// (YOLO's SPP: 5x5 to 13x13) run separably (each input row's window
// maximum, then each output's over the rows: 2k comparisons a value instead
// of k^2), which keeps the rule for ties but not the NaN rule (a NaN counts
// only as a window's first tap): an input holding a NaN runs the reference
// kernel (ops/pool.cpp) there, as does every other form.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "backends/cpu/fast_kernels.h"
#include "core/cpu_isa.h"
#include "core/cpu_isa_target.h"
#include "ops/common.h"
#include "ops/conv_util.h"

namespace kestrel::backends::cpu {

using ops::Window2D;
using ops::WindowGeom;

namespace baseline_isa {
#include "backends/cpu/pool_kernels.inc"
}  // namespace baseline_isa
KESTREL_ISA_AVX2_BEGIN
namespace avx2_isa {
#include "backends/cpu/pool_kernels.inc"
}  // namespace avx2_isa
KESTREL_ISA_END

namespace {

// 3x3 and smaller: a direct window's k^2 vectorized passes cost less than
// the separable form's scalar row pass and its scan for NaNs.
constexpr int64_t kDirectTaps = 9;

// The window of a 2-D float32 MaxPool over `spatial` ([H, W]) that these
// kernels take, or none (the reference then runs): no Indices output, no
// dilation, and every output's window holds an input tap (the reference's
// -inf for a window of padding alone is left to it).
std::optional<Window2D> fast_window(ops::KernelContext& ctx, const Tensor& X, bool channels_last) {
  if (X.dtype() != DType::Float32 || X.rank() != 4 || ctx.wants_output(1)) return std::nullopt;
  const std::vector<int64_t> kernel = ctx.node.attr_ints("kernel_shape");
  if (kernel.size() != 2) return std::nullopt;
  const std::vector<int64_t> spatial = channels_last ? std::vector<int64_t>{X.dim(1), X.dim(2)} : ops::spatial_dims(X.shape());
  const Window2D v(ops::window_geom(ctx, spatial, kernel, ctx.node.attr_i("ceil_mode", 0) != 0));
  const bool covered = v.PH < v.KH && v.PW < v.KW && (v.OH - 1) * v.SH - v.PH < v.H && (v.OW - 1) * v.SW - v.PW < v.W;
  if (v.DH != 1 || v.DW != 1 || !covered) return std::nullopt;
  return v;
}

bool has_nan(const Tensor& X, bool avx2) {
  const float* x = X.data<float>();
  return avx2 ? avx2_isa::any_nan(x, X.numel()) : baseline_isa::any_nan(x, X.numel());
}

void run_max_pool(ops::KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const std::optional<Window2D> w = fast_window(ctx, X, false);
  if (!w) return run_reference_kernel(ctx);
  const Window2D& v = *w;
  const float* x = X.data<float>();
  const bool avx2 = cpu_isa() >= CpuIsa::Avx2;
  const bool direct = v.KH * v.KW <= kDirectTaps;
  if (!direct && has_nan(X, avx2)) return run_reference_kernel(ctx);
  const int64_t planes = X.dim(0) * X.dim(1), IS = v.H * v.W, OS = v.OH * v.OW;
  Tensor& Y = ctx.output(0, DType::Float32, {X.dim(0), X.dim(1), v.OH, v.OW});
  if (Y.numel() == 0) return;
  float* y = Y.data<float>();
  ops::parallel_for(ctx, planes, 1, [&](int64_t p) {
    const float* xp = x + p * IS;
    if (direct) {
      if (avx2) avx2_isa::max_pool_plane_direct(v, xp, y + p * OS);
      else baseline_isa::max_pool_plane_direct(v, xp, y + p * OS);
      return;
    }
    static thread_local std::vector<float> rows;
    rows.resize(size_t(v.H * v.OW));
    if (avx2) avx2_isa::max_pool_plane_separable(v, xp, y + p * OS, rows.data());
    else baseline_isa::max_pool_plane_separable(v, xp, y + p * OS, rows.data());
  });
}

// MaxPoolChannelsLast (ops/pool.cpp): every channel of a
// pixel at once. Small windows directly; large ones (YOLO's SPP) separably,
// both passes over whole channel runs (an input holding a NaN runs the
// reference there, as above).
void run_max_pool_channels_last(ops::KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const std::optional<Window2D> w = fast_window(ctx, X, true);
  if (!w) return run_reference_kernel(ctx);
  const Window2D& v = *w;
  const bool avx2 = cpu_isa() >= CpuIsa::Avx2;
  const bool direct = v.KH * v.KW <= kDirectTaps;
  if (!direct && has_nan(X, avx2)) return run_reference_kernel(ctx);
  const int64_t N = X.dim(0), C = X.dim(3), IS = v.H * v.W * C, OS = v.OH * v.OW * C;
  Tensor& Y = ctx.output(0, DType::Float32, {N, v.OH, v.OW, C});
  if (Y.numel() == 0) return;
  const float* x = X.data<float>();
  float* y = Y.data<float>();
  if (direct) {
    ops::parallel_for(ctx, N * v.OH, 1, [&](int64_t t) {
      const int64_t n = t / v.OH, oh = t % v.OH;
      float* yr = y + n * OS + oh * v.OW * C;
      if (avx2) avx2_isa::max_pool_row_channels_last(v, C, x + n * IS, oh, yr);
      else baseline_isa::max_pool_row_channels_last(v, C, x + n * IS, oh, yr);
    });
    return;
  }
  // First pass: each input row over the window's columns, [N, H, OW, C].
  const int64_t RS = v.H * v.OW * C;
  std::vector<float> rows(size_t(N * RS));
  ops::parallel_for(ctx, N * v.H, 1, [&](int64_t t) {
    const int64_t n = t / v.H, ih = t % v.H;
    float* r = rows.data() + n * RS + ih * v.OW * C;
    if (avx2) avx2_isa::max_pool_columns_channels_last(v, C, x + n * IS, ih, r);
    else baseline_isa::max_pool_columns_channels_last(v, C, x + n * IS, ih, r);
  });
  ops::parallel_for(ctx, N * v.OH, 1, [&](int64_t t) {
    const int64_t n = t / v.OH, oh = t % v.OH;
    float* yr = y + n * OS + oh * v.OW * C;
    if (avx2) avx2_isa::max_pool_rows_channels_last(v, C, rows.data() + n * RS, oh, yr);
    else baseline_isa::max_pool_rows_channels_last(v, C, rows.data() + n * RS, oh, yr);
  });
}

}  // namespace

KESTREL_CPU_KERNEL(MaxPool, {.min_opset = 1, .run = run_max_pool});
KESTREL_CPU_KERNEL(MaxPoolChannelsLast, {.domain = "com.kestrel", .run = run_max_pool_channels_last});

}  // namespace kestrel::backends::cpu

// The CPU backend's MaxPool for float32 images (2-D, undilated, without the
// Indices output): separable (each input row's window maximum, then each
// output's over the rows), so a k x k window costs 2k comparisons a value
// instead of k^2, and the row passes vectorize. A plane holding a NaN, and
// every other form, runs the reference kernel (ops/pool.cpp), whose tie and
// NaN rule this keeps bit for bit.
#include <algorithm>
#include <cmath>
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

void run_reference(ops::KernelContext& ctx) {
  const ops::OpDef* ref = ops::find_op(ctx.node.domain, ctx.node.op_type, ctx.node.opset);
  if (!ref) ctx.fail("no reference MaxPool kernel at opset ", ctx.node.opset);
  ref->run(ctx);
}

// A plane holding a NaN: the reference's rule tap by tap in window order (a
// NaN starts the maximum only as the window's first tap, and never replaces
// it later), which the separable form does not keep.
void max_pool_plane_in_order(const Window2D& v, const float* x, float* y) {
  for (int64_t oh = 0; oh < v.OH; ++oh)
    for (int64_t ow = 0; ow < v.OW; ++ow) {
      const int64_t ih0 = oh * v.SH - v.PH, iw0 = ow * v.SW - v.PW;
      const int64_t h0 = std::max<int64_t>(0, -ih0), h1 = std::min(v.KH, v.H - ih0);
      const int64_t w0 = std::max<int64_t>(0, -iw0), w1 = std::min(v.KW, v.W - iw0);
      float best = x[(ih0 + h0) * v.W + iw0 + w0];
      for (int64_t kh = h0; kh < h1; ++kh)
        for (int64_t kw = kh == h0 ? w0 + 1 : w0; kw < w1; ++kw) {
          const float t = x[(ih0 + kh) * v.W + iw0 + kw];
          if (t > best) best = t;
        }
      y[oh * v.OW + ow] = best;
    }
}

void run_max_pool(ops::KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.dtype() != DType::Float32 || X.rank() != 4 || ctx.wants_output(1)) return run_reference(ctx);
  const std::vector<int64_t> kernel = ctx.node.attr_ints("kernel_shape");
  if (kernel.size() != 2) return run_reference(ctx);
  const WindowGeom g = ops::window_geom(ctx, ops::spatial_dims(X.shape()), kernel, ctx.node.attr_i("ceil_mode", 0) != 0);
  const Window2D v(g);
  // Every output's window must hold an input tap (the reference's -inf for
  // an all-padding window is left to it).
  const bool covered = v.PH < v.KH && v.PW < v.KW && (v.OH - 1) * v.SH - v.PH < v.H && (v.OW - 1) * v.SW - v.PW < v.W;
  if (v.DH != 1 || v.DW != 1 || !covered) return run_reference(ctx);
  const int64_t planes = X.dim(0) * X.dim(1), IS = v.H * v.W, OS = v.OH * v.OW;
  Tensor& Y = ctx.output(0, DType::Float32, {X.dim(0), X.dim(1), v.OH, v.OW});
  if (Y.numel() == 0) return;
  const float* x = X.data<float>();
  float* y = Y.data<float>();
  const bool avx2 = cpu_isa() >= CpuIsa::Avx2;
  ops::parallel_for(ctx, planes, 1, [&](int64_t p) {
    const float* xp = x + p * IS;
    if (std::any_of(xp, xp + IS, [](float f) { return std::isnan(f); })) return max_pool_plane_in_order(v, xp, y + p * OS);
    static thread_local std::vector<float> rows;
    rows.resize(size_t(v.H * v.OW));
    if (avx2) avx2_isa::max_pool_plane(v, xp, y + p * OS, rows.data());
    else baseline_isa::max_pool_plane(v, xp, y + p * OS, rows.data());
  });
}

}  // namespace

KESTREL_CPU_KERNEL(MaxPool, {.min_opset = 1, .run = run_max_pool});

}  // namespace kestrel::backends::cpu

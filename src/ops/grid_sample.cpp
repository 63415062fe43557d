// GridSample (opsets 16 and 20) over 4-D [N, C, H, W] inputs: each output
// pixel samples the input at the grid's normalized (x, y) in [-1, 1].
#include <cmath>
#include <string>

#include "ops/common.h"

namespace kestrel::ops {
namespace {

enum class Mode { Nearest, Linear, Cubic };
enum class Pad { Zeros, Border, Reflection };

// Folds x back into [lo, hi] by mirroring, as many times as needed.
double reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    double dx = lo - x;
    int64_t n = int64_t(dx / range);
    double r = dx - double(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    int64_t n = int64_t(dx / range);
    double r = dx - double(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

struct Axis {
  int64_t size;
  double lo, hi;  // reflection bounds: pixel edges, or centers with align_corners
};

// The input index to read for integer index i along an axis, or -1 for a zero.
int64_t tap(int64_t i, const Axis& a, Pad pad) {
  if (i >= 0 && i < a.size) return i;
  if (pad == Pad::Zeros) return -1;
  if (pad == Pad::Reflection) i = int64_t(reflect(double(i), a.lo, a.hi));
  return std::clamp<int64_t>(i, 0, a.size - 1);
}

void cubic_weights(double t, double w[4]) {
  const double a = -0.75;
  auto near = [&](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
  auto far = [&](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

void run_grid_sample(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  if (x.dtype() != DType::Float32 || grid.dtype() != DType::Float32)
    ctx.fail("only float inputs are supported, got ", dtype_name(x.dtype()), " and ", dtype_name(grid.dtype()));
  if (x.rank() != 4)
    ctx.fail("only 4-D input [N, C, H, W] is supported, got ", shape_str(x.shape()));
  if (grid.rank() != 4 || grid.dim(0) != x.dim(0) || grid.dim(3) != 2)
    ctx.fail("grid has shape ", shape_str(grid.shape()), "; expected [", x.dim(0), ", H_out, W_out, 2]");
  std::string ms = ctx.node.attr_s("mode", ctx.node.opset >= 20 ? "linear" : "bilinear");
  Mode mode = (ms == "bilinear" || ms == "linear") ? Mode::Linear
              : ms == "nearest"                   ? Mode::Nearest
              : (ms == "bicubic" || ms == "cubic") ? Mode::Cubic
                                                  : (ctx.fail("unknown mode '", ms, "'"), Mode::Linear);
  std::string ps = ctx.node.attr_s("padding_mode", "zeros");
  Pad pad = ps == "zeros" ? Pad::Zeros : ps == "border" ? Pad::Border : ps == "reflection" ? Pad::Reflection
                                                                    : (ctx.fail("unknown padding_mode '", ps, "'"), Pad::Zeros);
  bool align = ctx.node.attr_i("align_corners", 0) != 0;
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), oh = grid.dim(1), ow = grid.dim(2);
  Axis ax{w, align ? 0.0 : -0.5, align ? double(w - 1) : double(w) - 0.5};
  Axis ay{h, align ? 0.0 : -0.5, align ? double(h - 1) : double(h) - 0.5};
  Tensor& y = ctx.output(0, DType::Float32, {n, c, oh, ow});
  if (y.numel() == 0) return;
  if (h == 0 || w == 0) ctx.fail("cannot sample an empty image ", shape_str(x.shape()));
  const float* xp = x.data<float>();
  const float* gp = grid.data<float>();
  float* yp = y.data<float>();
  // Grid coordinates to pixel coordinates, with border/reflection applied.
  auto denorm = [&](double v, const Axis& a) {
    double p = align ? (v + 1) / 2 * double(a.size - 1) : ((v + 1) * double(a.size) - 1) / 2;
    if (pad == Pad::Border) p = std::clamp(p, 0.0, double(a.size - 1));
    else if (pad == Pad::Reflection) p = reflect(p, a.lo, a.hi);
    return p;
  };
  parallel_for(ctx, n * oh, 1 + 256 / std::max<int64_t>(1, ow * c), [&](int64_t row) {
    int64_t b = row / oh, oy = row % oh;
    for (int64_t ox = 0; ox < ow; ++ox) {
      const float* g = gp + ((b * oh + oy) * ow + ox) * 2;
      double px = denorm(g[0], ax), py = denorm(g[1], ay);
      // Up to 4x4 taps: input offsets and weights, shared by every channel.
      int64_t offs[16];
      double wts[16];
      int taps = 0;
      auto add = [&](int64_t ix, int64_t iy, double wt) {
        int64_t tx = tap(ix, ax, pad), ty = tap(iy, ay, pad);
        offs[taps] = (tx < 0 || ty < 0) ? -1 : ty * w + tx;
        wts[taps++] = wt;
      };
      if (mode == Mode::Nearest) {
        add(int64_t(std::nearbyint(px)), int64_t(std::nearbyint(py)), 1.0);
      } else if (mode == Mode::Linear) {
        double fx = std::floor(px), fy = std::floor(py), tx = px - fx, ty = py - fy;
        int64_t x0 = int64_t(fx), y0 = int64_t(fy);
        add(x0, y0, (1 - tx) * (1 - ty));
        add(x0 + 1, y0, tx * (1 - ty));
        add(x0, y0 + 1, (1 - tx) * ty);
        add(x0 + 1, y0 + 1, tx * ty);
      } else {
        double fx = std::floor(px), fy = std::floor(py), wx[4], wy[4];
        cubic_weights(px - fx, wx);
        cubic_weights(py - fy, wy);
        for (int j = 0; j < 4; ++j)
          for (int i = 0; i < 4; ++i) add(int64_t(fx) - 1 + i, int64_t(fy) - 1 + j, wx[i] * wy[j]);
      }
      for (int64_t ch = 0; ch < c; ++ch) {
        const float* plane = xp + (b * c + ch) * h * w;
        double acc = 0;
        for (int k = 0; k < taps; ++k)
          if (offs[k] >= 0) acc += wts[k] * plane[offs[k]];
        yp[((b * c + ch) * oh + oy) * ow + ox] = float(acc);
      }
    }
  });
}

}  // namespace

KESTREL_OP(GridSample, {.min_opset = 16, .run = run_grid_sample});

}  // namespace kestrel::ops

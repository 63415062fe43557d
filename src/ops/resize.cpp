// Resize (opsets 10..19) and Upsample (opsets 7 and 9).
//
// Every mode is separable: along each axis an output index reads a few input
// indices with weights (1 for nearest, 2 for linear, 4 for cubic, more when
// antialiasing widens the filter). The generic path applies these 1-D maps
// one axis at a time; nearest (any rank, any dtype) and bilinear over the two
// trailing axes of a 2-D or 4-D tensor run in a single direct pass, the latter
// in ONNX Runtime's order of operations (resize_kernels.inc).
#include <algorithm>
#include <cmath>
#include <vector>
#include <cstring>
#include <string>

#include "core/cpu_isa.h"
#include "core/cpu_isa_target.h"
#include "ops/common.h"
#include "ops/resize_util.h"

namespace kestrel::ops {

// The inner loops, compiled for the baseline and for AVX2 + FMA (M-LSD's
// bilinear upsampling: a library call per fma at the baseline).
namespace baseline_isa {
#include "ops/resize_kernels.inc"
}  // namespace baseline_isa
KESTREL_ISA_AVX2_BEGIN
namespace avx2_isa {
#include "ops/resize_kernels.inc"
}  // namespace avx2_isa
KESTREL_ISA_END

namespace {

// One separable pass: [outer, in, inner] -> [outer, out, inner] along the map.
void resample_axis(const KernelContext& ctx, const ResizeParams& p, const ResizeAxisMap& m, const float* src,
                   float* dst, int64_t outer, int64_t inner) {
  const bool avx2 = cpu_isa() >= CpuIsa::Avx2;
  parallel_for(ctx, outer * m.out, 1 + (1 << 14) / std::max<int64_t>(1, inner * m.taps), [&](int64_t r) {
    int64_t o = r % m.out, b = r / m.out;
    float* d = dst + r * inner;
    if (m.extrap[size_t(o)]) {
      std::fill_n(d, inner, p.extrapolation);
      return;
    }
    const float* s = src + b * m.in * inner;
    const int64_t* idx = &m.idx[size_t(o * m.taps)];
    const float* w = &m.w[size_t(o * m.taps)];
    if (avx2)
      avx2_isa::blend_rows(s, idx, w, m.taps, inner, d);
    else
      baseline_isa::blend_rows(s, idx, w, m.taps, inner, d);
  });
}

// Nearest for any rank and dtype: a gather with one index table per axis.
void gather_nearest(const KernelContext& ctx, const Tensor& x, Tensor& y, const std::vector<ResizeAxisMap>& maps) {
  int rank = x.rank();
  size_t es = dtype_size(x.dtype());
  std::vector<int64_t> in_stride(size_t(rank), 1);
  for (int i = rank - 2; i >= 0; --i) in_stride[size_t(i)] = in_stride[size_t(i + 1)] * x.dim(i + 1);
  int64_t row_len = rank ? y.dim(rank - 1) : 1;
  int64_t rows = row_len ? y.numel() / row_len : 0;
  const uint8_t* src = x.raw();
  uint8_t* dst = y.raw();
  const ResizeAxisMap& last = maps[size_t(rank - 1)];
  // An unchanged last axis (channels last): each row copies one input row.
  const bool copy_rows = last.identity();
  parallel_for(ctx, rows, 1 + (1 << 14) / std::max<int64_t>(1, row_len), [&](int64_t r) {
    int64_t base = 0, rem = r;
    for (int d = rank - 2; d >= 0; --d) {
      int64_t od = rem % y.dim(d);
      rem /= y.dim(d);
      base += maps[size_t(d)].idx[size_t(od)] * in_stride[size_t(d)];
    }
    uint8_t* out = dst + size_t(r * row_len) * es;
    if (copy_rows) {
      std::memcpy(out, src + size_t(base) * es, size_t(row_len) * es);
    } else if (es == 4) {
      const float* s = reinterpret_cast<const float*>(src) + base;
      float* o = reinterpret_cast<float*>(out);
      for (int64_t i = 0; i < row_len; ++i) o[i] = s[last.idx[size_t(i)]];
    } else {
      for (int64_t i = 0; i < row_len; ++i)
        std::memcpy(out + size_t(i) * es, src + size_t(base + last.idx[size_t(i)]) * es, es);
    }
  });
}

// Bilinear over the two trailing axes of [..., H, W] (ONNX Runtime's 2-D and
// 4-D case), one plane per task, computed as ONNX Runtime computes it
// (bilinear_row) so the two agree bit for bit. Each input row a plane's
// output rows read is gathered at the column taps once (a row of left taps
// and one of right taps), then every output row reading it blends two such
// rows with contiguous loads: an output row gathered its four values each
// (M-LSD's three 2x upsamplings: 1.3-1.6 ms a run on one core, against ONNX
// Runtime's 0.52).
void bilinear_planes(const KernelContext& ctx, const Tensor& x, Tensor& y, const ResizeAxisMap& mh,
                     const ResizeAxisMap& mw) {
  const int rank = x.rank();
  const int64_t ih = x.dim(rank - 2), iw = x.dim(rank - 1), oh = y.dim(rank - 2), ow = y.dim(rank - 1);
  const int64_t planes = ih * iw != 0 ? x.numel() / (ih * iw) : 0;
  const float* src = x.data<float>();
  float* dst = y.data<float>();
  const bool avx2 = cpu_isa() >= CpuIsa::Avx2;
  std::vector<float> wa(static_cast<size_t>(ow)), wb(static_cast<size_t>(ow));
  for (int64_t o = 0; o < ow; ++o) wa[size_t(o)] = mw.w[size_t(2 * o)], wb[size_t(o)] = mw.w[size_t(2 * o + 1)];
  parallel_for(ctx, planes, 1, [&](int64_t pl) {
    const float* s = src + pl * ih * iw;
    // Two gathered input rows at a time (the rows above and below), each
    // its left then right taps, kept while the next output rows read them.
    static thread_local std::vector<float> rows;
    rows.resize(size_t(4 * ow));
    int64_t held[2] = {-1, -1};
    const auto find = [&](int64_t r) { return held[0] == r ? 0 : held[1] == r ? 1 : -1; };
    const auto fill = [&](int k, int64_t r) {
      held[k] = r;
      float* g = rows.data() + 2 * k * ow;
      const float* in = s + r * iw;
      for (int64_t o = 0; o < ow; ++o) g[o] = in[mw.idx[size_t(2 * o)]], g[ow + o] = in[mw.idx[size_t(2 * o + 1)]];
    };
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t i0 = mh.idx[size_t(2 * oy)], i1 = mh.idx[size_t(2 * oy + 1)];
      int k0 = find(i0), k1 = find(i1);
      if (k0 < 0) {  // into the slot i1 does not hold
        k0 = k1 == 0 ? 1 : 0;
        fill(k0, i0);
        if (i1 == i0) k1 = k0;
      }
      if (k1 < 0) fill(k1 = 1 - k0, i1);
      const float* g0 = rows.data() + 2 * k0 * ow;
      const float* g1 = rows.data() + 2 * k1 * ow;
      const float wy0 = mh.w[size_t(2 * oy)], wy1 = mh.w[size_t(2 * oy + 1)];
      float* d = dst + (pl * oh + oy) * ow;
      if (avx2)
        avx2_isa::bilinear_row(g0, g0 + ow, g1, g1 + ow, wy0, wy1, wa.data(), wb.data(), ow, d);
      else
        baseline_isa::bilinear_row(g0, g0 + ow, g1, g1 + ow, wy0, wy1, wa.data(), wb.data(), ow, d);
    }
  });
}

// Bilinear over the middle axes of [N, H, W, C] (a channels-last image, as
// the CPU backend's layout pass hands Resize one: backends/cpu/
// channels_last.h; ONNX Runtime also takes scales [1, s, s, 1] as NHWC),
// one output row per task, each output pixel the planar path's four terms
// for every channel (bilinear_pixel), so both layouts give the same bits.
void bilinear_channels_last(const KernelContext& ctx, const Tensor& x, Tensor& y, const ResizeAxisMap& mh,
                            const ResizeAxisMap& mw) {
  const int64_t ih = x.dim(1), iw = x.dim(2), C = x.dim(3), oh = y.dim(1), ow = y.dim(2);
  const float* src = x.data<float>();
  float* dst = y.data<float>();
  const bool avx2 = cpu_isa() >= CpuIsa::Avx2;
  parallel_for(ctx, y.dim(0) * oh, 1 + (1 << 14) / std::max<int64_t>(1, ow * C), [&](int64_t t) {
    const int64_t n = t / oh, oy = t % oh;
    const float* r0 = src + (n * ih + mh.idx[size_t(2 * oy)]) * iw * C;
    const float* r1 = src + (n * ih + mh.idx[size_t(2 * oy + 1)]) * iw * C;
    const float wy0 = mh.w[size_t(2 * oy)], wy1 = mh.w[size_t(2 * oy + 1)];
    float* d = dst + t * ow * C;
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t a = mw.idx[size_t(2 * ox)] * C, b = mw.idx[size_t(2 * ox + 1)] * C;
      const float wa = mw.w[size_t(2 * ox)], wb = mw.w[size_t(2 * ox + 1)];
      const float w11 = wa * wy0, w21 = wb * wy0, w12 = wa * wy1, w22 = wb * wy1;
      if (avx2)
        avx2_isa::bilinear_pixel(r0 + a, r0 + b, r1 + a, r1 + b, w11, w21, w12, w22, C, d + ox * C);
      else
        baseline_isa::bilinear_pixel(r0 + a, r0 + b, r1 + a, r1 + b, w11, w21, w12, w22, C, d + ox * C);
    }
  });
}

// Resizes x to out_shape with per-axis scales (used by the coordinate formulas)
// and crop box (roi, tf_crop_and_resize only).
void resize(KernelContext& ctx, const ResizeParams& p, const Tensor& x, const Shape& out_shape,
            const std::vector<double>& scales, const std::vector<double>& roi) {
  int rank = x.rank();
  // Allocated first: an output too large to hold fails here, not while
  // building per-axis maps as long as the output.
  Tensor& y = ctx.output(0, x.dtype(), out_shape);
  std::vector<ResizeAxisMap> maps;
  for (int d = 0; d < rank; ++d) {
    if (x.dim(d) == 0 && out_shape[size_t(d)] > 0)
      ctx.fail("cannot resize axis ", d, " of size 0 to ", out_shape[size_t(d)]);
    double start = roi.empty() ? 0 : roi[size_t(d)], end = roi.empty() ? 1 : roi[size_t(rank + d)];
    maps.push_back(resize_axis_map(p, x.dim(d), out_shape[size_t(d)], scales[size_t(d)], start, end));
  }
  if (y.numel() == 0) return;
  bool any_extrap = false;
  for (const ResizeAxisMap& m : maps) any_extrap |= m.any_extrap;
  if (p.mode == ResizeMode::Nearest && !any_extrap && rank > 0) return gather_nearest(ctx, x, y, maps);
  if (x.dtype() != DType::Float32)
    ctx.fail("mode ", p.mode == ResizeMode::Nearest ? "nearest with extrapolation" : "linear/cubic",
             " needs float input, got ", dtype_name(x.dtype()));
  // ONNX Runtime's bilinear cases: rank 2, or rank 4 resized over its last two axes.
  if ((rank == 2 || (rank == 4 && maps[0].identity() && maps[1].identity())) && p.mode == ResizeMode::Linear &&
      !p.antialias && !any_extrap)
    return bilinear_planes(ctx, x, y, maps[size_t(rank - 2)], maps[size_t(rank - 1)]);
  if (rank == 4 && maps[0].identity() && maps[3].identity() && p.mode == ResizeMode::Linear && !p.antialias &&
      !any_extrap)
    return bilinear_channels_last(ctx, x, y, maps[1], maps[2]);
  // Generic: one pass per axis that changes anything, ping-ponging buffers.
  Tensor cur = x;
  Shape shape = x.shape();
  for (int d = rank - 1; d >= 0; --d) {
    if (maps[size_t(d)].identity()) continue;
    Shape next_shape = shape;
    next_shape[size_t(d)] = out_shape[size_t(d)];
    Tensor next(DType::Float32, next_shape);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < d; ++k) outer *= shape[size_t(k)];
    for (int k = d + 1; k < rank; ++k) inner *= shape[size_t(k)];
    resample_axis(ctx, p, maps[size_t(d)], cur.data<float>(), next.data<float>(), outer, inner);
    cur = next;
    shape = next_shape;
  }
  std::memcpy(y.raw(), cur.raw(), y.nbytes());
}

void run_resize(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const Tensor& x = ctx.input(0);
  int rank = x.rank();
  ResizeParams p = resize_params(ctx);
  auto read_f = [&](int i) { return ctx.has_input(i) ? ctx.input(i).to_f32() : std::vector<float>{}; };
  std::vector<float> roi_in = n.opset >= 11 ? read_f(1) : std::vector<float>{};
  std::vector<float> scales_in = read_f(n.opset >= 11 ? 2 : 1);
  std::vector<int64_t> sizes_in;
  if (n.opset >= 11 && ctx.has_input(3)) sizes_in = ctx.input(3).to_i64();
  ResizeTarget t = resize_target(ctx, x.shape(), scales_in, sizes_in);
  int na = int(t.axes.size());
  std::vector<double> roi;
  if (p.ctm == "tf_crop_and_resize") {
    if (int(roi_in.size()) != 2 * na) ctx.fail("roi has ", roi_in.size(), " values; expected ", 2 * na);
    roi.assign(size_t(2 * rank), 0.0);
    for (int d = 0; d < rank; ++d) roi[size_t(rank + d)] = 1.0;
    for (int k = 0; k < na; ++k) {
      roi[size_t(t.axes[size_t(k)])] = roi_in[size_t(k)];
      roi[size_t(rank + t.axes[size_t(k)])] = roi_in[size_t(na + k)];
    }
  }
  resize(ctx, p, x, t.out, t.scales, roi);
}

void run_upsample(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ResizeParams p;
  p.mode = parse_resize_mode(ctx, ctx.node.attr_s("mode", "nearest"));
  if (p.mode == ResizeMode::Cubic) ctx.fail("mode 'cubic' is not an Upsample mode");
  p.ctm = "asymmetric";
  p.nearest_mode = "floor";
  std::vector<float> s = ctx.node.opset < 9 ? ctx.node.attr_floats("scales") : ctx.input(1).to_f32();
  if (int(s.size()) != x.rank()) ctx.fail("scales has ", s.size(), " values for input ", shape_str(x.shape()));
  std::vector<double> scales(s.begin(), s.end());
  resize(ctx, p, x, shape_from_scales(ctx, x.shape(), scales), scales, {});
}

}  // namespace

KESTREL_OP(Resize, {.min_opset = 10, .run = run_resize});
KESTREL_OP(Upsample, {.min_opset = 7, .run = run_upsample});

}  // namespace kestrel::ops

// Resize (opsets 10..19) and Upsample (opsets 7 and 9).
//
// Every mode is separable: along each axis an output index reads a few input
// indices with weights (1 for nearest, 2 for linear, 4 for cubic, more when
// antialiasing widens the filter). The generic path applies these 1-D maps
// one axis at a time; nearest (any rank, any dtype) and bilinear over the two
// trailing axes of a 4-D tensor run in a single direct pass.
#include <cmath>
#include <vector>
#include <cstring>
#include <string>

#include "ops/common.h"

namespace kestrel::ops {
namespace {

enum class Mode { Nearest, Linear, Cubic };

struct Params {
  Mode mode = Mode::Nearest;
  std::string ctm = "half_pixel";            // coordinate_transformation_mode
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  float extrapolation = 0;
  bool antialias = false;
};

// The 1-D map of one axis: output index o reads idx[o*taps + k] with weight w[o*taps + k].
struct AxisMap {
  int64_t in = 0, out = 0;
  int taps = 1;
  std::vector<int64_t> idx;
  std::vector<float> w;
  std::vector<char> extrap;  // 1: the coordinate falls outside the crop (tf_crop_and_resize)
  bool any_extrap = false;
  // True when every output copies input o exactly: one tap of weight 1 on o
  // (linear/cubic maps at scale 1 have their other taps at weight 0).
  bool identity() const {
    if (in != out || any_extrap) return false;
    for (int64_t o = 0; o < out; ++o)
      for (int k = 0; k < taps; ++k) {
        float wk = w[size_t(o * taps + k)];
        if (wk != 0 && (wk != 1 || idx[size_t(o * taps + k)] != o)) return false;
      }
    return true;
  }
};

// Maps output coordinate x to the input coordinate, per ONNX's formulas.
double source_coord(const Params& p, double x, double scale, int64_t in, int64_t out, double start, double end) {
  const std::string& m = p.ctm;
  if (m == "asymmetric") return x / scale;
  if (m == "align_corners") {
    // ONNX's reference takes the resized length as in * scale, before flooring.
    double len = double(in) * scale;
    return len == 1 ? 0 : x * double(in - 1) / (len - 1);
  }
  if (m == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  if (m == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (m == "tf_crop_and_resize")
    return out > 1 ? start * double(in - 1) + x * (end - start) * double(in - 1) / double(out - 1)
                   : 0.5 * (start + end) * double(in - 1);
  if (m == "half_pixel_symmetric") {
    double adjust = double(out) / (scale * double(in));
    double center = double(in) / 2;
    return center * (1 - adjust) + (x + 0.5) / scale - 0.5;
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

int64_t nearest_index(const Params& p, double x) {
  const std::string& m = p.nearest_mode;
  if (m == "floor") return int64_t(std::floor(x));
  if (m == "ceil") return int64_t(std::ceil(x));
  double f = std::floor(x);
  if (x - f == 0.5) return int64_t(m == "round_prefer_ceil" ? f + 1 : f);
  return int64_t(std::round(x));
}

double kernel(const Params& p, double d) {
  d = std::fabs(d);
  if (p.mode == Mode::Linear) return d < 1 ? 1 - d : 0;
  double a = p.cubic_a;
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

AxisMap make_axis_map(const Params& p, int64_t in, int64_t out, double scale, double start, double end) {
  AxisMap m;
  m.in = in;
  m.out = out;
  m.extrap.assign(size_t(out), 0);
  // Antialiasing stretches the filter by 1/scale when shrinking.
  double s = (p.antialias && scale < 1) ? scale : 1.0;
  double radius = p.mode == Mode::Cubic ? 2 : 1;
  m.taps = p.mode == Mode::Nearest ? 1 : s == 1.0 ? int(2 * radius) : int(std::ceil(2 * radius / s)) + 1;
  m.idx.assign(size_t(out * m.taps), 0);
  m.w.assign(size_t(out * m.taps), 0.0f);
  for (int64_t o = 0; o < out; ++o) {
    double x = source_coord(p, double(o), scale, in, out, start, end);
    int64_t* idx = &m.idx[size_t(o * m.taps)];
    float* w = &m.w[size_t(o * m.taps)];
    if (p.ctm == "tf_crop_and_resize" && (x < 0 || x > double(in - 1))) {
      m.extrap[size_t(o)] = 1;
      m.any_extrap = true;
      continue;
    }
    if (p.mode == Mode::Nearest) {
      idx[0] = std::clamp<int64_t>(nearest_index(p, x), 0, in - 1);
      w[0] = 1;
      continue;
    }
    // Taps j with |j - x| * s < radius; out-of-range taps repeat the edge
    // unless exclude_outside drops them. Weights are normalized to sum to 1.
    int64_t first = int64_t(std::floor(x - radius / s)) + 1;
    double sum = 0;
    for (int k = 0; k < m.taps; ++k) {
      int64_t j = first + k;
      double wk = kernel(p, (double(j) - x) * s);
      if (p.exclude_outside && (j < 0 || j >= in)) wk = 0;
      idx[k] = std::clamp<int64_t>(j, 0, in - 1);
      w[k] = float(wk);
      sum += wk;
    }
    if (sum != 0)
      for (int k = 0; k < m.taps; ++k) w[k] = float(w[k] / sum);
  }
  return m;
}

// One separable pass: [outer, in, inner] -> [outer, out, inner] along the map.
void resample_axis(const KernelContext& ctx, const Params& p, const AxisMap& m, const float* src, float* dst,
                   int64_t outer, int64_t inner) {
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
    if (inner == 1) {
      float acc = 0;
      for (int k = 0; k < m.taps; ++k) acc += w[k] * s[idx[k]];
      d[0] = acc;
      return;
    }
    std::fill_n(d, inner, 0.0f);
    for (int k = 0; k < m.taps; ++k) {
      if (w[k] == 0) continue;
      const float* row = s + idx[k] * inner;
      float wk = w[k];
      for (int64_t i = 0; i < inner; ++i) d[i] += wk * row[i];
    }
  });
}

// Nearest for any rank and dtype: a gather with one index table per axis.
void gather_nearest(const KernelContext& ctx, const Tensor& x, Tensor& y, const std::vector<AxisMap>& maps) {
  int rank = x.rank();
  size_t es = dtype_size(x.dtype());
  std::vector<int64_t> in_stride(size_t(rank), 1);
  for (int i = rank - 2; i >= 0; --i) in_stride[size_t(i)] = in_stride[size_t(i + 1)] * x.dim(i + 1);
  int64_t row_len = rank ? y.dim(rank - 1) : 1;
  int64_t rows = row_len ? y.numel() / row_len : 0;
  const uint8_t* src = x.raw();
  uint8_t* dst = y.raw();
  const AxisMap& last = maps[size_t(rank - 1)];
  parallel_for(ctx, rows, 1 + (1 << 14) / std::max<int64_t>(1, row_len), [&](int64_t r) {
    int64_t base = 0, rem = r;
    for (int d = rank - 2; d >= 0; --d) {
      int64_t od = rem % y.dim(d);
      rem /= y.dim(d);
      base += maps[size_t(d)].idx[size_t(od)] * in_stride[size_t(d)];
    }
    uint8_t* out = dst + size_t(r * row_len) * es;
    if (es == 4) {
      const float* s = reinterpret_cast<const float*>(src) + base;
      float* o = reinterpret_cast<float*>(out);
      for (int64_t i = 0; i < row_len; ++i) o[i] = s[last.idx[size_t(i)]];
    } else {
      for (int64_t i = 0; i < row_len; ++i)
        std::memcpy(out + size_t(i) * es, src + size_t(base + last.idx[size_t(i)]) * es, es);
    }
  });
}

// Bilinear over the two trailing axes of [N, C, H, W], one plane per task:
// each input row is interpolated horizontally once into a scratch plane, then
// every output row blends two of those rows (a loop the compiler vectorizes).
// When upsampling, each input row feeds several output rows, so this does a
// fraction of the gathers of interpolating per output element.
void bilinear_nchw(const KernelContext& ctx, const Tensor& x, Tensor& y, const AxisMap& mh, const AxisMap& mw) {
  int64_t planes = x.dim(0) * x.dim(1), ih = x.dim(2), iw = x.dim(3), oh = y.dim(2), ow = y.dim(3);
  const float* src = x.data<float>();
  float* dst = y.data<float>();
  parallel_for(ctx, planes, 1, [&](int64_t pl) {
    static thread_local std::vector<float> rows;
    rows.resize(size_t(ih * ow));
    for (int64_t r = 0; r < ih; ++r) {
      const float* s = src + (pl * ih + r) * iw;
      float* t = rows.data() + r * ow;
      for (int64_t ox = 0; ox < ow; ++ox)
        t[ox] = std::fma(mw.w[size_t(2 * ox + 1)], s[mw.idx[size_t(2 * ox + 1)]],
                         mw.w[size_t(2 * ox)] * s[mw.idx[size_t(2 * ox)]]);
    }
    for (int64_t oy = 0; oy < oh; ++oy) {
      const float* r0 = rows.data() + mh.idx[size_t(2 * oy)] * ow;
      const float* r1 = rows.data() + mh.idx[size_t(2 * oy + 1)] * ow;
      float wy0 = mh.w[size_t(2 * oy)], wy1 = mh.w[size_t(2 * oy + 1)];
      float* d = dst + (pl * oh + oy) * ow;
      // The same operations, in the same order, as the generic separable path
      // (a zero-weight tap is skipped there): results are bit-identical.
      if (wy1 == 0)
        for (int64_t ox = 0; ox < ow; ++ox) d[ox] = wy0 * r0[ox];
      else if (wy0 == 0)
        for (int64_t ox = 0; ox < ow; ++ox) d[ox] = wy1 * r1[ox];
      else
        for (int64_t ox = 0; ox < ow; ++ox) d[ox] = std::fma(wy1, r1[ox], wy0 * r0[ox]);
    }
  });
}

// Resizes x to out_shape with per-axis scales (used by the coordinate formulas)
// and crop box (roi, tf_crop_and_resize only).
void resize(KernelContext& ctx, const Params& p, const Tensor& x, const Shape& out_shape,
            const std::vector<double>& scales, const std::vector<double>& roi) {
  int rank = x.rank();
  std::vector<AxisMap> maps;
  for (int d = 0; d < rank; ++d) {
    if (x.dim(d) == 0 && out_shape[size_t(d)] > 0)
      ctx.fail("cannot resize axis ", d, " of size 0 to ", out_shape[size_t(d)]);
    double start = roi.empty() ? 0 : roi[size_t(d)], end = roi.empty() ? 1 : roi[size_t(rank + d)];
    maps.push_back(make_axis_map(p, x.dim(d), out_shape[size_t(d)], scales[size_t(d)], start, end));
  }
  Tensor& y = ctx.output(0, x.dtype(), out_shape);
  if (y.numel() == 0) return;
  bool any_extrap = false;
  for (const AxisMap& m : maps) any_extrap |= m.any_extrap;
  if (p.mode == Mode::Nearest && !any_extrap && rank > 0) return gather_nearest(ctx, x, y, maps);
  if (x.dtype() != DType::Float32)
    ctx.fail("mode ", p.mode == Mode::Nearest ? "nearest with extrapolation" : "linear/cubic",
             " needs float input, got ", dtype_name(x.dtype()));
  // The one-pass path pays off when rows are reused (not when shrinking a lot).
  if (rank == 4 && p.mode == Mode::Linear && !any_extrap && maps[0].identity() && maps[1].identity() &&
      maps[2].taps == 2 && maps[3].taps == 2 && x.dim(2) <= 2 * y.dim(2))
    return bilinear_nchw(ctx, x, y, maps[2], maps[3]);
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

Mode parse_mode(const KernelContext& ctx, const std::string& m) {
  if (m == "nearest") return Mode::Nearest;
  if (m == "linear" || m == "bilinear") return Mode::Linear;
  if (m == "cubic") return Mode::Cubic;
  ctx.fail("unknown mode '", m, "'");
}

// Output shape from per-axis scales: floor(in * scale).
Shape shape_from_scales(const KernelContext& ctx, const Tensor& x, const std::vector<double>& scales) {
  Shape out;
  for (int d = 0; d < x.rank(); ++d) {
    if (!(scales[size_t(d)] > 0)) ctx.fail("scale ", scales[size_t(d)], " for axis ", d, " must be positive");
    out.push_back(int64_t(std::floor(double(x.dim(d)) * scales[size_t(d)])));
  }
  return out;
}

void run_resize(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const Tensor& x = ctx.input(0);
  int rank = x.rank();
  Params p;
  p.mode = parse_mode(ctx, n.attr_s("mode", "nearest"));
  if (n.opset < 11) {
    // Resize-10 has no coordinate modes: it behaves like Upsample.
    p.ctm = "asymmetric";
    p.nearest_mode = "floor";
  } else {
    p.ctm = n.attr_s("coordinate_transformation_mode", "half_pixel");
    p.nearest_mode = n.attr_s("nearest_mode", "round_prefer_floor");
    p.cubic_a = n.attr_f("cubic_coeff_a", -0.75f);
    p.exclude_outside = n.attr_i("exclude_outside", 0) != 0;
    p.extrapolation = n.attr_f("extrapolation_value", 0.0f);
    p.antialias = n.attr_i("antialias", 0) != 0;
  }
  static const char* kModes[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                 "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn"};
  if (std::find(std::begin(kModes), std::end(kModes), p.ctm) == std::end(kModes))
    ctx.fail("unknown coordinate_transformation_mode '", p.ctm, "'");
  static const char* kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(std::begin(kNearest), std::end(kNearest), p.nearest_mode) == std::end(kNearest))
    ctx.fail("unknown nearest_mode '", p.nearest_mode, "'");

  // Which axes scales/sizes/roi talk about (opset 18 `axes`; all by default).
  std::vector<int> axes;
  if (n.has("axes")) {
    std::vector<bool> seen(size_t(rank), false);
    for (int64_t a : n.attr_ints("axes")) {
      int k = normalize_axis(ctx, a, rank);
      if (seen[size_t(k)]) ctx.fail("axis ", a, " is listed twice");
      seen[size_t(k)] = true;
      axes.push_back(k);
    }
  } else {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  int na = int(axes.size());
  auto read_f = [&](int i) { return ctx.has_input(i) ? ctx.input(i).to_f32() : std::vector<float>{}; };
  std::vector<float> roi_in = n.opset >= 11 ? read_f(1) : std::vector<float>{};
  std::vector<float> scales_in = read_f(n.opset >= 11 ? 2 : 1);
  std::vector<int64_t> sizes_in;
  if (n.opset >= 11 && ctx.has_input(3)) sizes_in = ctx.input(3).to_i64();
  if (!scales_in.empty() && !sizes_in.empty()) ctx.fail("only one of scales and sizes may be given");
  if (scales_in.empty() && sizes_in.empty()) ctx.fail("needs either scales or sizes");

  std::vector<double> scales(size_t(rank), 1.0);
  Shape out = x.shape();
  if (!scales_in.empty()) {
    if (int(scales_in.size()) != na)
      ctx.fail("scales has ", scales_in.size(), " values for ", na, " axes (input ", shape_str(x.shape()), ")");
    for (int k = 0; k < na; ++k) scales[size_t(axes[size_t(k)])] = scales_in[size_t(k)];
    out = shape_from_scales(ctx, x, scales);
  } else {
    if (int(sizes_in.size()) != na)
      ctx.fail("sizes has ", sizes_in.size(), " values for ", na, " axes (input ", shape_str(x.shape()), ")");
    std::string policy = n.attr_s("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      ctx.fail("unknown keep_aspect_ratio_policy '", policy, "'");
    double common = policy == "not_larger" ? INFINITY : 0;
    for (int k = 0; k < na; ++k) {
      int d = axes[size_t(k)];
      if (sizes_in[size_t(k)] < 0) ctx.fail("sizes has a negative value ", sizes_in[size_t(k)]);
      double s = x.dim(d) ? double(sizes_in[size_t(k)]) / double(x.dim(d)) : 1.0;
      scales[size_t(d)] = s;
      out[size_t(d)] = sizes_in[size_t(k)];
      common = policy == "not_larger" ? std::min(common, s) : std::max(common, s);
    }
    if (policy != "stretch")
      for (int d : axes) {
        scales[size_t(d)] = common;
        out[size_t(d)] = int64_t(std::floor(double(x.dim(d)) * common + 0.5));
      }
  }
  std::vector<double> roi;
  if (p.ctm == "tf_crop_and_resize") {
    if (int(roi_in.size()) != 2 * na) ctx.fail("roi has ", roi_in.size(), " values; expected ", 2 * na);
    roi.assign(size_t(2 * rank), 0.0);
    for (int d = 0; d < rank; ++d) roi[size_t(rank + d)] = 1.0;
    for (int k = 0; k < na; ++k) {
      roi[size_t(axes[size_t(k)])] = roi_in[size_t(k)];
      roi[size_t(rank + axes[size_t(k)])] = roi_in[size_t(na + k)];
    }
  }
  resize(ctx, p, x, out, scales, roi);
}

void run_upsample(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Params p;
  p.mode = parse_mode(ctx, ctx.node.attr_s("mode", "nearest"));
  if (p.mode == Mode::Cubic) ctx.fail("mode 'cubic' is not an Upsample mode");
  p.ctm = "asymmetric";
  p.nearest_mode = "floor";
  std::vector<float> s = ctx.node.opset < 9 ? ctx.node.attr_floats("scales") : ctx.input(1).to_f32();
  if (int(s.size()) != x.rank()) ctx.fail("scales has ", s.size(), " values for input ", shape_str(x.shape()));
  std::vector<double> scales(s.begin(), s.end());
  resize(ctx, p, x, shape_from_scales(ctx, x, scales), scales, {});
}

}  // namespace

KESTREL_OP(Resize, {.min_opset = 10, .run = run_resize});
KESTREL_OP(Upsample, {.min_opset = 7, .run = run_upsample});

}  // namespace kestrel::ops

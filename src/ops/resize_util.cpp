// Resize's shared rules: attribute parsing, output shape, and the sampling
// formulas: ONNX's reference in double precision for nearest, cubic and
// antialiased resizing; ONNX Runtime's float arithmetic for linear.
#include "ops/resize_util.h"

#include <algorithm>
#include <cmath>

#include "ops/common.h"

namespace kestrel::ops {
namespace {

// Maps output coordinate x to the input coordinate, per ONNX's formulas.
double source_coord(const ResizeParams& p, double x, double scale, int64_t in, int64_t out, double start,
                    double end) {
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

int64_t nearest_index(const ResizeParams& p, double x) {
  const std::string& m = p.nearest_mode;
  if (m == "floor") return int64_t(std::floor(x));
  if (m == "ceil") return int64_t(std::ceil(x));
  double f = std::floor(x);
  if (x - f == 0.5) return int64_t(m == "round_prefer_ceil" ? f + 1 : f);
  return int64_t(std::round(x));
}

// The interpolation filter at distance d: triangle (linear) or Keys cubic.
double filter(const ResizeParams& p, double d) {
  d = std::fabs(d);
  if (p.mode == ResizeMode::Linear) return d < 1 ? 1 - d : 0;
  double a = p.cubic_a;
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// The same formulas as ONNX Runtime evaluates them for linear resizing: in
// float, one operation at a time (its kernels are compiled without fused
// multiply-adds). A coordinate one ulp apart moves a weight by an ulp, and
// in a dynamically quantized model (IS-Net small) that ulp can cross a
// rounding boundary of the next DynamicQuantizeLinear and grow through every
// later convolution: matching ONNX Runtime needs its arithmetic, not just
// the exact formula. ORT keeps the coordinate of an axis at scale 1 as is.
float source_coord_f32(const ResizeParams& p, float x, float scale, int64_t in_len, int64_t out_len, float start,
                       float end) {
  const std::string& m = p.ctm;
  const float in = float(in_len), out = float(out_len);
  if (m == "tf_crop_and_resize")
    return out > 1 ? start * (in - 1) + (x * (end - start) * (in - 1)) / (out - 1) : 0.5f * (start + end) * (in - 1);
  if (scale == 1) return x;
  if (m == "asymmetric") return x / scale;
  if (m == "align_corners") {
    // The resized length as ONNX defines it, in * scale before flooring
    // (ONNX Runtime takes the floored output length: the two differ only
    // where in * scale is not whole, and there Kestrel keeps to ONNX).
    const float len = float(double(in_len) * double(scale));
    return len == 1 ? 0 : x * (in - 1) / (len - 1);
  }
  if (m == "pytorch_half_pixel") return out > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
  if (m == "tf_half_pixel_for_nn") return (x + 0.5f) / scale;
  if (m == "half_pixel_symmetric") {
    const float adjust = out / (scale * in), center = in / 2;
    return center * (1 - adjust) + (x + 0.5f) / scale - 0.5f;
  }
  return (x + 0.5f) / scale - 0.5f;  // half_pixel
}

// Linear taps as ONNX Runtime forms them: the coordinate clamped into the
// axis, its two neighbours, and weights |x - x2| and |x - x1| (not 1 - d);
// where both neighbours are the last index, 0.5 each.
void linear_taps_f32(const ResizeParams& p, ResizeAxisMap& m, int64_t o, double scale, double start, double end) {
  const float fx = source_coord_f32(p, float(o), float(scale), m.in, m.out, float(start), float(end));
  if (p.ctm == "tf_crop_and_resize" && (fx < 0 || fx > float(m.in - 1))) {
    m.extrap[size_t(o)] = 1;
    m.any_extrap = true;
    return;
  }
  const float x = std::max(0.0f, std::min(fx, float(m.in - 1)));
  const int64_t x1 = std::min(int64_t(x), m.in - 1), x2 = std::min(x1 + 1, m.in - 1);
  int64_t* idx = &m.idx[size_t(o * 2)];
  float* w = &m.w[size_t(o * 2)];
  idx[0] = x1;
  idx[1] = x2;
  w[0] = x1 == x2 ? 0.5f : std::fabs(x - float(x2));
  w[1] = x1 == x2 ? 0.5f : std::fabs(x - float(x1));
}

}  // namespace

ResizeMode parse_resize_mode(const KernelContext& ctx, const std::string& m) {
  if (m == "nearest") return ResizeMode::Nearest;
  if (m == "linear" || m == "bilinear") return ResizeMode::Linear;
  if (m == "cubic") return ResizeMode::Cubic;
  ctx.fail("unknown mode '", m, "'");
}

ResizeParams resize_params(const KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  ResizeParams p;
  p.mode = parse_resize_mode(ctx, n.attr_s("mode", "nearest"));
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
  return p;
}

namespace {
// floor(in * scale + bias) as a dim; a product past int64 (a scale of 1e30)
// is refused, since converting it would be undefined behaviour.
int64_t scaled_dim(const KernelContext& ctx, int64_t in, double scale, double bias, size_t axis) {
  double v = std::floor(double(in) * scale + bias);
  if (!(v < 0x1p63)) ctx.fail("axis ", axis, " of size ", in, " at scale ", scale, " overflows int64");
  return int64_t(v);
}
}  // namespace

Shape shape_from_scales(const KernelContext& ctx, const Shape& in, const std::vector<double>& scales) {
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!(scales[d] > 0)) ctx.fail("scale ", scales[d], " for axis ", d, " must be positive");
    out.push_back(scaled_dim(ctx, in[d], scales[d], 0, d));
  }
  return out;
}

ResizeTarget resize_target(const KernelContext& ctx, const Shape& in, const std::vector<float>& scales_in,
                           const std::vector<int64_t>& sizes_in) {
  const ir::Node& n = ctx.node;
  int rank = int(in.size());
  ResizeTarget t;
  if (n.has("axes")) {
    std::vector<bool> seen(size_t(rank), false);
    for (int64_t a : n.attr_ints("axes")) {
      int k = normalize_axis(ctx, a, rank);
      if (seen[size_t(k)]) ctx.fail("axis ", a, " is listed twice");
      seen[size_t(k)] = true;
      t.axes.push_back(k);
    }
  } else {
    for (int d = 0; d < rank; ++d) t.axes.push_back(d);
  }
  int na = int(t.axes.size());
  if (!scales_in.empty() && !sizes_in.empty()) ctx.fail("only one of scales and sizes may be given");
  if (scales_in.empty() && sizes_in.empty()) ctx.fail("needs either scales or sizes");

  t.scales.assign(size_t(rank), 1.0);
  t.out = in;
  if (!scales_in.empty()) {
    if (int(scales_in.size()) != na)
      ctx.fail("scales has ", scales_in.size(), " values for ", na, " axes (input ", shape_str(in), ")");
    for (int k = 0; k < na; ++k) t.scales[size_t(t.axes[size_t(k)])] = scales_in[size_t(k)];
    t.out = shape_from_scales(ctx, in, t.scales);
    return t;
  }
  if (int(sizes_in.size()) != na)
    ctx.fail("sizes has ", sizes_in.size(), " values for ", na, " axes (input ", shape_str(in), ")");
  std::string policy = n.attr_s("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    ctx.fail("unknown keep_aspect_ratio_policy '", policy, "'");
  double common = policy == "not_larger" ? INFINITY : 0;
  for (int k = 0; k < na; ++k) {
    int d = t.axes[size_t(k)];
    if (sizes_in[size_t(k)] < 0) ctx.fail("sizes has a negative value ", sizes_in[size_t(k)]);
    double s = in[size_t(d)] ? double(sizes_in[size_t(k)]) / double(in[size_t(d)]) : 1.0;
    t.scales[size_t(d)] = s;
    t.out[size_t(d)] = sizes_in[size_t(k)];
    common = policy == "not_larger" ? std::min(common, s) : std::max(common, s);
  }
  if (policy != "stretch")
    for (int d : t.axes) {
      t.scales[size_t(d)] = common;
      t.out[size_t(d)] = scaled_dim(ctx, in[size_t(d)], common, 0.5, size_t(d));
    }
  return t;
}

bool ResizeAxisMap::identity() const {
  if (in != out || any_extrap) return false;
  // Output o copies input o when its taps on o weigh 1 in all (a linear
  // map's last index has two taps of 0.5 on it) and every other tap 0.
  for (int64_t o = 0; o < out; ++o) {
    float on_o = 0;
    for (int k = 0; k < taps; ++k) {
      float wk = w[size_t(o * taps + k)];
      if (idx[size_t(o * taps + k)] == o)
        on_o += wk;
      else if (wk != 0)
        return false;
    }
    if (on_o != 1) return false;
  }
  return true;
}

ResizeAxisMap resize_axis_map(const ResizeParams& p, int64_t in, int64_t out, double scale, double start,
                              double end) {
  ResizeAxisMap m;
  m.in = in;
  m.out = out;
  m.extrap.assign(size_t(out), 0);
  // Antialiasing stretches the filter by 1/scale when shrinking.
  double s = (p.antialias && scale < 1) ? scale : 1.0;
  double radius = p.mode == ResizeMode::Cubic ? 2 : 1;
  m.taps = p.mode == ResizeMode::Nearest ? 1 : s == 1.0 ? int(2 * radius) : int(std::ceil(2 * radius / s)) + 1;
  m.idx.assign(size_t(out * m.taps), 0);
  m.w.assign(size_t(out * m.taps), 0.0f);
  const bool ort_linear = p.mode == ResizeMode::Linear && !p.antialias;
  for (int64_t o = 0; o < out; ++o) {
    if (ort_linear) {
      linear_taps_f32(p, m, o, scale, start, end);
      continue;
    }
    double x = source_coord(p, double(o), scale, in, out, start, end);
    int64_t* idx = &m.idx[size_t(o * m.taps)];
    float* w = &m.w[size_t(o * m.taps)];
    if (p.ctm == "tf_crop_and_resize" && (x < 0 || x > double(in - 1))) {
      m.extrap[size_t(o)] = 1;
      m.any_extrap = true;
      continue;
    }
    if (p.mode == ResizeMode::Nearest) {
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
      double wk = filter(p, (double(j) - x) * s);
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

}  // namespace kestrel::ops

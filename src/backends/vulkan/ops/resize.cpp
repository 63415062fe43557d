// Resize (opsets 10+; shaders/resize.comp). The per-axis source indices and
// weights are computed on the host with the formulas of the CPU reference
// (src/ops/resize.cpp), in double precision, and uploaded as tables: nearest
// runs over any axes and dtypes; linear over the last two axes (bilinear, or
// 1-D linear) of float tensors. Cubic, antialiasing, tf_crop_and_resize and
// linear over leading axes are left to the CPU.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/vulkan/ops/movement.h"

namespace kestrel::vulkan {
namespace {

struct Params {
  bool linear = false;
  std::string ctm = "half_pixel";  // coordinate_transformation_mode
  std::string nearest_mode = "round_prefer_floor";
};

double source_coord(const Params& p, double x, double scale, int64_t in, int64_t out) {
  const std::string& m = p.ctm;
  if (m == "asymmetric") return x / scale;
  if (m == "align_corners") {
    // ONNX's reference takes the resized length as in * scale, before flooring.
    double len = double(in) * scale;
    return len == 1 ? 0 : x * double(in - 1) / (len - 1);
  }
  if (m == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  if (m == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
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

// One axis's table: TAPS (1 nearest, 2 linear) entries per output index.
struct AxisMap {
  std::vector<int32_t> idx;
  std::vector<float> w;
  bool identity = true;  // every output o reads input o with weight 1
};

AxisMap make_axis_map(const Params& p, int64_t in, int64_t out, double scale) {
  AxisMap m;
  int taps = p.linear ? 2 : 1;
  m.idx.assign(size_t(out * taps), 0);
  m.w.assign(size_t(out * taps), 0.0f);
  m.identity = in == out;
  for (int64_t o = 0; o < out; ++o) {
    double x = source_coord(p, double(o), scale, in, out);
    int32_t* idx = &m.idx[size_t(o * taps)];
    float* w = &m.w[size_t(o * taps)];
    if (!p.linear) {
      idx[0] = int32_t(std::clamp<int64_t>(nearest_index(p, x), 0, in - 1));
      w[0] = 1;
      m.identity &= idx[0] == o;
      continue;
    }
    // Two taps floor(x), floor(x)+1 with the triangle kernel; out-of-range
    // taps repeat the edge; weights normalized to sum to 1.
    int64_t first = int64_t(std::floor(x - 1)) + 1;
    double wk[2], sum = 0;
    for (int k = 0; k < 2; ++k) {
      double d = std::fabs(double(first + k) - x);
      wk[k] = d < 1 ? 1 - d : 0;
      idx[k] = int32_t(std::clamp<int64_t>(first + k, 0, in - 1));
      w[k] = float(wk[k]);
      sum += wk[k];
    }
    if (sum != 0)
      for (int k = 0; k < 2; ++k) w[k] = float(w[k] / sum);
    for (int k = 0; k < 2; ++k) m.identity &= w[k] == 0 || (w[k] == 1 && idx[k] == o);
  }
  return m;
}

struct ResizePush {
  uint32_t base, n;
  Dims6 odims, istride, off;
};

std::vector<float> host_floats(const OpContext& ctx, int i) {
  return ctx.has_input(i) ? ctx.host_input(i).to_f32() : std::vector<float>{};
}

void resize(OpContext& ctx) {
  const ir::Node& n = ctx.node;
  const GpuTensor& x = ctx.input(0);
  int rank = int(x.shape.size());
  Params p;
  std::string mode = n.attr_s("mode", "nearest");
  if (mode == "cubic") ctx.unsupported("cubic mode is left to the CPU");
  if (mode != "nearest" && mode != "linear" && mode != "bilinear") ctx.fail("unknown mode '", mode, "'");
  p.linear = mode != "nearest";
  if (n.opset < 11) {
    // Resize-10 has no coordinate modes: it behaves like Upsample.
    p.ctm = "asymmetric";
    p.nearest_mode = "floor";
  } else {
    p.ctm = n.attr_s("coordinate_transformation_mode", "half_pixel");
    p.nearest_mode = n.attr_s("nearest_mode", "round_prefer_floor");
    if (n.attr_i("antialias", 0) != 0 && p.linear) ctx.unsupported("antialiasing is left to the CPU");
  }
  static const char* kModes[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                 "asymmetric", "tf_half_pixel_for_nn"};
  if (p.ctm == "tf_crop_and_resize") ctx.unsupported("tf_crop_and_resize is left to the CPU");
  if (std::find(std::begin(kModes), std::end(kModes), p.ctm) == std::end(kModes))
    ctx.fail("unknown coordinate_transformation_mode '", p.ctm, "'");
  static const char* kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(std::begin(kNearest), std::end(kNearest), p.nearest_mode) == std::end(kNearest))
    ctx.fail("unknown nearest_mode '", p.nearest_mode, "'");
  if (p.linear && !x.is_float()) ctx.fail("mode linear needs float input, got ", dtype_name(x.dtype));
  require_rank(ctx, x.shape);

  // Which axes scales/sizes talk about (opset 18 `axes`; all by default).
  std::vector<int> axes;
  if (n.has("axes")) {
    std::vector<bool> seen(size_t(rank), false);
    for (int64_t a : n.attr_ints("axes")) {
      int k = norm_axis(ctx, a, rank);
      if (seen[size_t(k)]) ctx.fail("axis ", a, " is listed twice");
      seen[size_t(k)] = true;
      axes.push_back(k);
    }
  } else {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  int na = int(axes.size());
  std::vector<float> scales_in = host_floats(ctx, n.opset >= 11 ? 2 : 1);
  std::vector<int64_t> sizes_in;
  if (n.opset >= 11 && ctx.has_input(3)) sizes_in = host_ints(ctx, 3);
  if (!scales_in.empty() && !sizes_in.empty()) ctx.fail("only one of scales and sizes may be given");
  if (scales_in.empty() && sizes_in.empty()) ctx.fail("needs either scales or sizes");
  std::vector<double> scales(size_t(rank), 1.0);
  Shape out = x.shape;
  if (!scales_in.empty()) {
    if (int(scales_in.size()) != na) ctx.fail("scales has ", scales_in.size(), " values for ", na, " axes");
    for (int k = 0; k < na; ++k) scales[size_t(axes[size_t(k)])] = scales_in[size_t(k)];
    for (int d = 0; d < rank; ++d) {
      if (!(scales[size_t(d)] > 0)) ctx.fail("scale ", scales[size_t(d)], " for axis ", d, " must be positive");
      out[size_t(d)] = int64_t(std::floor(double(x.shape[size_t(d)]) * scales[size_t(d)]));
    }
  } else {
    if (int(sizes_in.size()) != na) ctx.fail("sizes has ", sizes_in.size(), " values for ", na, " axes");
    std::string policy = n.attr_s("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      ctx.fail("unknown keep_aspect_ratio_policy '", policy, "'");
    double common = policy == "not_larger" ? INFINITY : 0;
    for (int k = 0; k < na; ++k) {
      int d = axes[size_t(k)];
      if (sizes_in[size_t(k)] < 0) ctx.fail("sizes has a negative value ", sizes_in[size_t(k)]);
      double s = x.shape[size_t(d)] ? double(sizes_in[size_t(k)]) / double(x.shape[size_t(d)]) : 1.0;
      scales[size_t(d)] = s;
      out[size_t(d)] = sizes_in[size_t(k)];
      common = policy == "not_larger" ? std::min(common, s) : std::max(common, s);
    }
    if (policy != "stretch")
      for (int d : axes) {
        scales[size_t(d)] = common;
        out[size_t(d)] = int64_t(std::floor(double(x.shape[size_t(d)]) * common + 0.5));
      }
  }
  for (int d = 0; d < rank; ++d)
    if (x.shape[size_t(d)] == 0 && out[size_t(d)] > 0) ctx.fail("cannot resize axis ", d, " of size 0");
  require_i32_indexing(ctx, std::max(x.numel(), shape_numel(out)));

  // Tables over the 6 right-aligned dims (padding dims: size 1, identity).
  Shape in6(size_t(kMaxRank), 1), out6(size_t(kMaxRank), 1);
  std::vector<double> scale6(size_t(kMaxRank), 1.0);
  for (int d = 0; d < rank; ++d) {
    in6[size_t(kMaxRank - rank + d)] = x.shape[size_t(d)];
    out6[size_t(kMaxRank - rank + d)] = out[size_t(d)];
    scale6[size_t(kMaxRank - rank + d)] = scales[size_t(d)];
  }
  std::vector<int32_t> idx, wbits;
  ResizePush push{};
  std::vector<int64_t> ist = row_strides(in6);
  for (int k = 0; k < kMaxRank; ++k) {
    AxisMap m = make_axis_map(p, in6[size_t(k)], out6[size_t(k)], scale6[size_t(k)]);
    if (p.linear && k < kMaxRank - 2 && !m.identity) ctx.unsupported("linear resize over a leading axis");
    push.off.d[k] = int32_t(idx.size());
    push.odims.d[k] = int32_t(out6[size_t(k)]);
    push.istride.d[k] = int32_t(ist[size_t(k)]);
    idx.insert(idx.end(), m.idx.begin(), m.idx.end());
    for (float w : m.w) {
      int32_t b;
      std::memcpy(&b, &w, 4);
      wbits.push_back(b);
    }
  }
  GpuTensor& y = ctx.output(0, x.dtype, out);
  if (y.numel() == 0) return;
  GpuTensor ti = ctx.upload_i32(idx);
  GpuTensor tw = ctx.upload_i32(p.linear ? wbits : std::vector<int32_t>{0});
  ctx.dispatch_elements("resize", {wide(x), p.linear ? 1 : 0}, {In(x), In(ti), In(tw), Out(y)}, &push, sizeof push,
                        uint64_t(y.numel()));
}

}  // namespace

KESTREL_VK_OP(Resize, {.min_opset = 10, .record = resize, .host_inputs = {1, 2, 3}});

}  // namespace kestrel::vulkan

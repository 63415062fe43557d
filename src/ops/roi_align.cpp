// RoiAlign (opsets 10 and 16): each region of interest is split into an
// output_height x output_width grid of bins; each bin averages (or takes the
// max of) bilinear samples on a regular sub-grid. Sample placement, edge
// clamping and the "max" mode (max of the weighted corner terms) follow
// ONNX Runtime, whose results the ONNX tests record.
#include <cmath>

#include "ops/common.h"

namespace kestrel::ops {
namespace {

// One sample's four corner offsets and bilinear weights (all zero when the
// sample falls more than one pixel outside the feature map).
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  float w[4] = {0, 0, 0, 0};
};

Sample bilinear_sample(float y, float x, int64_t H, int64_t W) {
  Sample s;
  if (y < -1.f || y > float(H) || x < -1.f || x > float(W)) return s;
  y = std::max(y, 0.f);
  x = std::max(x, 0.f);
  int64_t y_lo = int64_t(y), x_lo = int64_t(x), y_hi, x_hi;
  if (y_lo >= H - 1) {
    y_hi = y_lo = H - 1;
    y = float(y_lo);
  } else {
    y_hi = y_lo + 1;
  }
  if (x_lo >= W - 1) {
    x_hi = x_lo = W - 1;
    x = float(x_lo);
  } else {
    x_hi = x_lo + 1;
  }
  float ly = y - float(y_lo), lx = x - float(x_lo), hy = 1.f - ly, hx = 1.f - lx;
  s.pos[0] = y_lo * W + x_lo;
  s.pos[1] = y_lo * W + x_hi;
  s.pos[2] = y_hi * W + x_lo;
  s.pos[3] = y_hi * W + x_hi;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

void run_roi_align(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& batch_idx = ctx.input(2);
  const ir::Node& n = ctx.node;
  if (X.dtype() != DType::Float32 || rois.dtype() != DType::Float32)
    ctx.fail("X and rois must be float, got ", dtype_name(X.dtype()), " and ", dtype_name(rois.dtype()));
  if (X.rank() != 4) ctx.fail("X must be [N, C, H, W], got ", shape_str(X.shape()));
  if (rois.rank() != 2 || rois.dim(1) != 4) ctx.fail("rois must be [num_rois, 4], got ", shape_str(rois.shape()));
  std::vector<int64_t> bi = batch_idx.to_i64();
  if (int64_t(bi.size()) != rois.dim(0) || batch_idx.rank() != 1)
    ctx.fail("batch_indices ", shape_str(batch_idx.shape()), " must hold one index per roi (", rois.dim(0), ")");
  std::string mode = n.attr_s("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("mode '", mode, "' is not avg or max");
  // Opset 10 has no coordinate_transformation_mode; it behaves as output_half_pixel.
  std::string ctm = n.attr_s("coordinate_transformation_mode", n.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    ctx.fail("coordinate_transformation_mode '", ctm, "' is not half_pixel or output_half_pixel");
  const bool half_pixel = ctm == "half_pixel", is_max = mode == "max";
  const int64_t OH = n.attr_i("output_height", 1), OW = n.attr_i("output_width", 1);
  const int64_t ratio = n.attr_i("sampling_ratio", 0);
  const float scale = n.attr_f("spatial_scale", 1.f);
  if (OH < 1 || OW < 1) ctx.fail("output_height and output_width must be positive, got ", OH, " and ", OW);
  if (ratio < 0) ctx.fail("sampling_ratio must be non-negative, got ", ratio);
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), R = rois.dim(0);
  for (int64_t r = 0; r < R; ++r) {
    if (bi[size_t(r)] < 0 || bi[size_t(r)] >= N)
      ctx.fail("batch index ", bi[size_t(r)], " of roi ", r, " is out of range for batch size ", N);
    for (int k = 0; k < 4; ++k)
      if (!std::isfinite(rois.data<float>()[r * 4 + k])) ctx.fail("roi ", r, " has a non-finite coordinate");
  }

  Tensor& Y = ctx.output(0, DType::Float32, {R, C, OH, OW});
  if (Y.numel() == 0 || H == 0 || W == 0) return;
  const float* x = X.data<float>();
  const float* rp = rois.data<float>();
  float* y = Y.data<float>();
  parallel_for(ctx, R, 1, [&](int64_t r) {
    const float off = half_pixel ? 0.5f : 0.f;
    const float* roi = rp + r * 4;  // [x1, y1, x2, y2]
    float x0 = roi[0] * scale - off, y0 = roi[1] * scale - off;
    float rw = roi[2] * scale - off - x0, rh = roi[3] * scale - off - y0;
    if (!half_pixel) {  // legacy mode forces rois to be at least 1x1
      rw = std::max(rw, 1.f);
      rh = std::max(rh, 1.f);
    }
    const float bh = rh / float(OH), bw = rw / float(OW);
    // A reversed roi (x2 < x1 with half_pixel) has no samples.
    const int64_t gh = ratio > 0 ? ratio : std::max<int64_t>(0, int64_t(std::ceil(rh / float(OH))));
    const int64_t gw = ratio > 0 ? ratio : std::max<int64_t>(0, int64_t(std::ceil(rw / float(OW))));
    const float count = float(std::max<int64_t>(gh * gw, 1));
    // Sample positions are shared by every channel of the roi.
    std::vector<Sample> samples;
    samples.reserve(size_t(OH * OW * gh * gw));
    for (int64_t ph = 0; ph < OH; ++ph)
      for (int64_t pw = 0; pw < OW; ++pw)
        for (int64_t iy = 0; iy < gh; ++iy) {
          float yy = y0 + float(ph) * bh + (float(iy) + .5f) * bh / float(gh);
          for (int64_t ix = 0; ix < gw; ++ix) {
            float xx = x0 + float(pw) * bw + (float(ix) + .5f) * bw / float(gw);
            samples.push_back(bilinear_sample(yy, xx, H, W));
          }
        }
    const int64_t per_bin = gh * gw;
    for (int64_t c = 0; c < C; ++c) {
      const float* plane = x + (bi[size_t(r)] * C + c) * H * W;
      float* out = y + (r * C + c) * OH * OW;
      for (int64_t b = 0; b < OH * OW; ++b) {
        const Sample* s = samples.data() + b * per_bin;
        float v = 0.f;
        for (int64_t k = 0; k < per_bin; ++k) {
          const Sample& p = s[k];
          if (!is_max) {
            v += p.w[0] * plane[p.pos[0]] + p.w[1] * plane[p.pos[1]] + p.w[2] * plane[p.pos[2]] +
                 p.w[3] * plane[p.pos[3]];
            continue;
          }
          float m = std::max(std::max(p.w[0] * plane[p.pos[0]], p.w[1] * plane[p.pos[1]]),
                             std::max(p.w[2] * plane[p.pos[2]], p.w[3] * plane[p.pos[3]]));
          v = k == 0 ? m : std::max(v, m);
        }
        out[b] = is_max ? v : v / count;
      }
    }
  });
}

}  // namespace

KESTREL_OP(RoiAlign, {.min_opset = 10, .run = run_roi_align});

}  // namespace kestrel::ops

// NonMaxSuppression: greedy per-(batch, class) selection of boxes by score,
// dropping any box whose IoU with an already selected one exceeds the
// threshold. Candidates are visited by descending score (lower box index
// first on ties) and results are listed by batch, class, then selection
// order, as ONNX Runtime does.
#include <algorithm>
#include <cmath>

#include "ops/common.h"

namespace kestrel::ops {
namespace {

struct Box {
  float y1, x1, y2, x2;  // sorted corners: y1 <= y2, x1 <= x2
};

Box read_box(const float* b, bool center) {
  if (center) {  // [x_center, y_center, width, height]
    float hw = b[2] / 2, hh = b[3] / 2;
    return {b[1] - hh, b[0] - hw, b[1] + hh, b[0] + hw};
  }
  // [y1, x1, y2, x2] with either corner pair allowed.
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// True when the IoU of a and b exceeds the threshold; empty boxes and
// disjoint boxes never suppress.
bool suppresses(const Box& a, const Box& b, float iou_threshold) {
  float iy1 = std::max(a.y1, b.y1), ix1 = std::max(a.x1, b.x1);
  float iy2 = std::min(a.y2, b.y2), ix2 = std::min(a.x2, b.x2);
  if (iy2 <= iy1 || ix2 <= ix1) return false;
  float inter = (iy2 - iy1) * (ix2 - ix1);
  float area_a = (a.y2 - a.y1) * (a.x2 - a.x1), area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
  if (area_a <= 0 || area_b <= 0) return false;
  float uni = area_a + area_b - inter;
  return uni > 0 && inter / uni > iou_threshold;
}

float scalar_input(const KernelContext& ctx, int i, float def, const char* what) {
  if (!ctx.has_input(i)) return def;
  const Tensor& t = ctx.input(i);
  if (t.numel() == 0) return def;
  if (t.numel() != 1) ctx.fail(what, " must be a single value, got shape ", shape_str(t.shape()));
  return t.to_f32()[0];
}

void run_nms(KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (boxes.dtype() != DType::Float32 || scores.dtype() != DType::Float32)
    ctx.fail("boxes and scores must be float, got ", dtype_name(boxes.dtype()), " and ", dtype_name(scores.dtype()));
  if (boxes.rank() != 3 || boxes.dim(2) != 4)
    ctx.fail("boxes must be [batches, spatial_dimension, 4], got ", shape_str(boxes.shape()));
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    ctx.fail("scores ", shape_str(scores.shape()), " must be [batches, classes, spatial_dimension] for boxes ",
             shape_str(boxes.shape()));
  int64_t max_per_class = 0;
  if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
    std::vector<int64_t> m = ctx.input(2).to_i64();
    if (m.size() != 1) ctx.fail("max_output_boxes_per_class must be a single value, got ", m.size());
    max_per_class = std::max<int64_t>(0, m[0]);
  }
  float iou_threshold = scalar_input(ctx, 3, 0.f, "iou_threshold");
  bool has_score_threshold = ctx.has_input(4) && ctx.input(4).numel() > 0;
  float score_threshold = scalar_input(ctx, 4, 0.f, "score_threshold");
  int64_t center = ctx.node.attr_i("center_point_box", 0);
  if (center != 0 && center != 1) ctx.fail("center_point_box must be 0 or 1, got ", center);

  const int64_t B = boxes.dim(0), S = boxes.dim(1), C = scores.dim(1);
  const float* bx = boxes.data<float>();
  const float* sc = scores.data<float>();
  std::vector<int64_t> selected;  // (batch, class, box) triples
  std::vector<Box> cand(static_cast<size_t>(S));
  std::vector<int64_t> order, kept;
  for (int64_t b = 0; b < B && max_per_class > 0; ++b) {
    for (int64_t s = 0; s < S; ++s) cand[size_t(s)] = read_box(bx + (b * S + s) * 4, center == 1);
    for (int64_t c = 0; c < C; ++c) {
      const float* cs = sc + (b * C + c) * S;
      order.clear();
      for (int64_t s = 0; s < S; ++s)
        // NaN scores are dropped: they have no place in a descending order.
        if (!std::isnan(cs[s]) && (!has_score_threshold || cs[s] > score_threshold)) order.push_back(s);
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return cs[i] > cs[j]; });
      kept.clear();
      for (int64_t s : order) {
        if (int64_t(kept.size()) >= max_per_class) break;
        bool keep = true;
        for (int64_t k : kept)
          if (suppresses(cand[size_t(k)], cand[size_t(s)], iou_threshold)) {
            keep = false;
            break;
          }
        if (!keep) continue;
        kept.push_back(s);
        selected.insert(selected.end(), {b, c, s});
      }
    }
  }
  Tensor& out = ctx.output(0, DType::Int64, {int64_t(selected.size() / 3), 3});
  std::copy(selected.begin(), selected.end(), out.data<int64_t>());
}

}  // namespace

KESTREL_OP(NonMaxSuppression, {.min_opset = 10, .run = run_nms});

}  // namespace kestrel::ops

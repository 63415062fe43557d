// com.kestrel DetectionBoxes: a detector head's outputs to its boxes, decode
// and class-wise NMS in one node (detection_boxes.h). Appended to a
// detector's graph by vision/detect.cpp, so the boxes are what a run returns
// wherever the model ran.
//
// Inputs: score_threshold and iou_threshold (float, one value each), then
// the head's outputs in its order. Attributes: head (detector_arch_name),
// width and height (the input's pixels), classes, max_detections.
// Outputs: detections [B, max_detections, 6 + 2K] float32 (x1, y1, x2, y2
// in input pixels, score, class, then K keypoints' x, y), best first, rows
// past a photo's count zero; count [B] int64, the rows each photo fills.
#include "ops/detection_boxes.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "ops/common.h"
#include "ops/registry.h"

namespace kestrel::ops {
namespace {

int64_t grid_cells(int width, int height) {
  int64_t n = 0;
  for (int s : kHeadStrides) n += int64_t(height / s) * int64_t(width / s);
  return n;
}

std::array<float, 4> center_box(float cx, float cy, float w, float h) {
  return {cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
}

void decode_faces(const HeadGeometry& head, const HeadOutputs& outs, int64_t b, float conf, std::vector<Detection>& dets) {
  const bool scrfd = head.arch == DetectorArch::Scrfd;
  const int anchors = scrfd ? 2 : 1;  // SCRFD's _bnkps models: two anchors per cell
  for (size_t si = 0; si < 3; ++si) {
    const int st = kHeadStrides[si], cols = head.width / st, rows_n = head.height / st;
    const int64_t n = int64_t(cols) * rows_n * anchors;
    const size_t k = 3;  // outputs per kind
    // SCRFD: score, bbox, kps; YuNet: cls, obj, bbox, kps.
    auto part = [&](size_t index) { return outs.values[index].data() + b * outs.per_photo[index]; };
    const float* score = part(si);
    const float* obj = scrfd ? nullptr : part(k + si);
    const float* bbox = part((scrfd ? 1 : 2) * k + si);
    const float* kps = part((scrfd ? 2 : 3) * k + si);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t cell = i / anchors;
      const float gx = float(cell % cols), gy = float(cell / cols), s = float(st);
      // YuNet's score: the geometric mean of class and objectness (each clamped to 0..1), as OpenCV decodes it.
      const float sc = scrfd ? score[i] : std::sqrt(std::clamp(score[i], 0.f, 1.f) * std::clamp(obj[i], 0.f, 1.f));
      if (sc < conf) continue;
      const float* bx = bbox + 4 * i;
      const float* p = kps + 10 * i;
      Detection d;
      d.score = sc;
      if (scrfd) {  // distances from the anchor's centre to the four sides, in strides
        const float cx = gx * s, cy = gy * s;
        d.box = {cx - bx[0] * s, cy - bx[1] * s, cx + bx[2] * s, cy + bx[3] * s};
        for (int j = 0; j < 5; ++j) d.keypoints.push_back({cx + p[2 * j] * s, cy + p[2 * j + 1] * s});
      } else {  // offsets from the cell's corner and log sizes, in strides
        d.box = center_box((gx + bx[0]) * s, (gy + bx[1]) * s, std::exp(bx[2]) * s, std::exp(bx[3]) * s);
        for (int j = 0; j < 5; ++j) d.keypoints.push_back({(gx + p[2 * j]) * s, (gy + p[2 * j + 1]) * s});
      }
      dets.push_back(std::move(d));
    }
  }
}

// UltraFace's boxes come decoded, as fractions of the input.
void decode_ultraface(const HeadGeometry& head, const HeadOutputs& outs, int64_t b, float conf,
                      std::vector<Detection>& dets) {
  const int64_t n = outs.per_photo[0] / 2;
  const float* score = outs.values[0].data() + b * outs.per_photo[0];
  const float* box = outs.values[1].data() + b * outs.per_photo[1];
  const float W = float(head.width), H = float(head.height);
  for (int64_t i = 0; i < n; ++i) {
    const float sc = score[2 * i + 1];  // softmax over (background, face)
    if (sc < conf) continue;
    const float* r = box + 4 * i;
    dets.push_back({0, sc, {r[0] * W, r[1] * H, r[2] * W, r[3] * H}, {}});
  }
}

// BlazeFace's anchors: cell centres of a square grid, 2 a cell on the finer
// grid and 6 on the coarser; each box and keypoint is an offset from its
// anchor in input pixels (MediaPipe's scales equal the input size), the
// score a logit.
void decode_blazeface(const HeadGeometry& head, const HeadOutputs& outs, int64_t b, float conf,
                      std::vector<Detection>& dets) {
  for (size_t g = 0; g < 2; ++g) {
    const int anchors = g == 0 ? 2 : 6;
    const int64_t n = outs.per_photo[g], cells = int64_t(std::lround(std::sqrt(double(n / anchors))));
    const size_t width = size_t(outs.per_photo[2 + g] / n);
    const float* score = outs.values[g].data() + b * n;
    const float* box = outs.values[2 + g].data() + b * outs.per_photo[2 + g];
    const float sx = float(head.width) / float(cells), sy = float(head.height) / float(cells);
    for (int64_t i = 0; i < n; ++i) {
      const float sc = 1.0f / (1.0f + std::exp(-std::clamp(score[i], -100.f, 100.f)));
      if (sc < conf) continue;
      const int64_t cell = i / anchors;
      const float ax = (float(cell % cells) + 0.5f) * sx, ay = (float(cell / cells) + 0.5f) * sy;
      const float* r = box + size_t(i) * width;
      Detection d;
      d.score = sc;
      d.box = center_box(ax + r[0], ay + r[1], r[2], r[3]);
      for (int k = 0; k < outs.keypoints; ++k) d.keypoints.push_back({ax + r[4 + 2 * k], ay + r[5 + 2 * k]});
      dets.push_back(std::move(d));
    }
  }
}

void decode_yolo(const HeadGeometry& head, const HeadOutputs& outs, int64_t b, float conf, std::vector<Detection>& dets) {
  const float* v = outs.values[0].data() + b * outs.per_photo[0];
  const int C = head.classes;
  if (head.arch == DetectorArch::YoloV8) {
    const int64_t N = outs.per_photo[0] / (4 + C);
    for (int64_t n = 0; n < N; ++n) {
      int best = 0;
      for (int c = 1; c < C; ++c)
        if (v[(4 + c) * N + n] > v[(4 + best) * N + n]) best = c;
      const float score = v[(4 + best) * N + n];
      if (score < conf) continue;
      dets.push_back({best, score, center_box(v[n], v[N + n], v[2 * N + n], v[3 * N + n]), {}});
    }
    return;
  }
  const int64_t W = 5 + C, N = outs.per_photo[0] / W;
  // YOLOX's rows are the grid cells of stride 8, then 16, then 32, row by row.
  int64_t n = 0;
  auto row = [&](float gx, float gy, float s) {
    const float* r = v + n * W;
    ++n;
    int best = 0;
    for (int c = 1; c < C; ++c)
      if (r[5 + c] > r[5 + best]) best = c;
    const float score = r[4] * r[5 + best];
    if (score < conf) return;
    if (s > 0)
      dets.push_back({best, score, center_box((r[0] + gx) * s, (r[1] + gy) * s, std::exp(r[2]) * s, std::exp(r[3]) * s), {}});
    else
      dets.push_back({best, score, center_box(r[0], r[1], r[2], r[3]), {}});
  };
  if (head.arch == DetectorArch::Yolox) {
    for (int s : kHeadStrides)
      for (int gy = 0; gy < head.height / s; ++gy)
        for (int gx = 0; gx < head.width / s; ++gx) row(float(gx), float(gy), float(s));
  } else {
    while (n < N) row(0, 0, 0);
  }
}

}  // namespace

DetectorArch parse_detector_arch(const std::string& name) {
  for (DetectorArch a : {DetectorArch::Auto, DetectorArch::YoloV8, DetectorArch::Yolox, DetectorArch::YoloV5,
                         DetectorArch::Scrfd, DetectorArch::Yunet, DetectorArch::UltraFace, DetectorArch::BlazeFace})
    if (name == detector_arch_name(a)) return a;
  fail_as(ErrorKind::InvalidArgument, "unknown detector architecture '", name,
          "' (auto, yolov8, yolox, yolov5, scrfd, yunet, ultraface, blazeface)");
}

const char* detector_arch_name(DetectorArch arch) {
  switch (arch) {
    case DetectorArch::YoloV8: return "yolov8";
    case DetectorArch::Yolox: return "yolox";
    case DetectorArch::YoloV5: return "yolov5";
    case DetectorArch::Scrfd: return "scrfd";
    case DetectorArch::Yunet: return "yunet";
    case DetectorArch::UltraFace: return "ultraface";
    case DetectorArch::BlazeFace: return "blazeface";
    case DetectorArch::Auto: break;
  }
  return "auto";
}

float iou(const std::array<float, 4>& a, const std::array<float, 4>& b) {
  const float iw = std::min(a[2], b[2]) - std::max(a[0], b[0]);
  const float ih = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  if (iw <= 0 || ih <= 0) return 0;
  const float inter = iw * ih;
  const float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  const float uni = area_a + area_b - inter;
  return uni > 0 ? inter / uni : 0;
}

std::vector<Detection> nms_per_class(std::vector<Detection> dets, float iou_threshold, size_t max_out) {
  std::stable_sort(dets.begin(), dets.end(), [](const Detection& a, const Detection& b) { return a.score > b.score; });
  std::vector<Detection> kept;
  for (Detection& d : dets) {
    if (kept.size() >= max_out) break;
    bool suppressed = false;
    for (const Detection& k : kept)
      if (k.class_id == d.class_id && iou(k.box, d.box) > iou_threshold) {
        suppressed = true;
        break;
      }
    if (!suppressed) kept.push_back(std::move(d));
  }
  return kept;
}

HeadLayout head_layout(const HeadGeometry& head, const std::vector<Shape>& shapes) {
  const DetectorArch a = head.arch;
  const size_t want = a == DetectorArch::Scrfd       ? 9
                      : a == DetectorArch::Yunet     ? 12
                      : a == DetectorArch::BlazeFace ? 4
                      : a == DetectorArch::UltraFace ? 2
                                                     : 1;
  KESTREL_CHECK(a != DetectorArch::Auto, "a detection head must be named");
  KESTREL_CHECK(shapes.size() == want, "a ", detector_arch_name(a), " head reads ", want, " outputs, got ",
                shapes.size());
  HeadLayout h;
  std::vector<int64_t>& per = h.per_photo;
  per.resize(shapes.size());
  auto rank3 = [&](size_t i, int64_t width, const char* what) {
    KESTREL_CHECK(shapes[i].size() == 3 && shapes[i][2] == width, what, " has shape ", shape_str(shapes[i]),
                  " where [B, N, ", width, "] was expected");
  };
  if (a == DetectorArch::Scrfd || a == DetectorArch::Yunet) {
    const int anchors = a == DetectorArch::Scrfd ? 2 : 1;
    const std::vector<int> widths = a == DetectorArch::Scrfd ? std::vector<int>{1, 4, 10} : std::vector<int>{1, 1, 4, 10};
    for (size_t kind = 0; kind < widths.size(); ++kind)
      for (size_t si = 0; si < 3; ++si) {
        const int st = kHeadStrides[si];
        per[kind * 3 + si] = int64_t(head.width / st) * (head.height / st) * anchors * widths[kind];
      }
    h.batch = per[0] ? shape_numel(shapes[0]) / per[0] : 0;
    h.keypoints = 5;
  } else if (a == DetectorArch::UltraFace) {
    rank3(0, 2, "UltraFace's scores");
    rank3(1, 4, "UltraFace's boxes");
    h.batch = shapes[0][0];
    const int64_t n = shapes[0][1];
    KESTREL_CHECK(shapes[1][0] == h.batch && shapes[1][1] == n, "UltraFace's scores ", shape_str(shapes[0]),
                  " and boxes ", shape_str(shapes[1]), " disagree on the number of priors");
    per = {2 * n, 4 * n};
  } else if (a == DetectorArch::BlazeFace) {
    rank3(0, 1, "BlazeFace's scores");
    h.batch = shapes[0][0];
    for (size_t g = 0; g < 2; ++g) {
      const Shape &st = shapes[g], &bt = shapes[2 + g];
      const int anchors = g == 0 ? 2 : 6;
      const int64_t n = st.size() == 3 ? st[1] : 0, cells = int64_t(std::lround(std::sqrt(double(n / anchors))));
      KESTREL_CHECK(st.size() == 3 && st[2] == 1 && st[0] == h.batch && n > 0 && cells * cells * anchors == n,
                    "BlazeFace's grid ", g, " has scores ", shape_str(st), ", not ", anchors,
                    " anchors on each cell of a square grid");
      KESTREL_CHECK(bt.size() == 3 && bt[0] == h.batch && bt[1] == n && bt[2] >= 4 && bt[2] % 2 == 0,
                    "BlazeFace's grid ", g, " has boxes ", shape_str(bt), " for scores ", shape_str(st));
      per[g] = n;
      per[2 + g] = n * bt[2];
      const int k = int((bt[2] - 4) / 2);
      KESTREL_CHECK(g == 0 || k == h.keypoints, "BlazeFace's grids carry ", h.keypoints, " and ", k, " keypoints");
      h.keypoints = k;
    }
  } else if (a == DetectorArch::YoloV8) {
    const Shape& t = shapes[0];
    KESTREL_CHECK(t.size() == 3 && t[1] == 4 + head.classes, "YOLOv8 output of shape ", shape_str(t), " where [B, ",
                  4 + head.classes, ", N] was declared");
    h.batch = t[0];
    per[0] = t[1] * t[2];
  } else {
    const Shape& t = shapes[0];
    rank3(0, 5 + head.classes, detector_arch_name(a));
    h.batch = t[0];
    KESTREL_CHECK(a != DetectorArch::Yolox || t[1] == grid_cells(head.width, head.height), "YOLOX output has ", t[1],
                  " rows where its ", head.width, "x", head.height, " input makes ", grid_cells(head.width, head.height),
                  " grid cells");
    per[0] = t[1] * t[2];
  }
  for (size_t i = 0; i < shapes.size(); ++i)
    KESTREL_CHECK(shape_numel(shapes[i]) == h.batch * per[i], detector_arch_name(a), " head output ", i, " has shape ",
                  shape_str(shapes[i]), " where ", h.batch, " photos of ", per[i], " values were expected");
  return h;
}

HeadOutputs head_outputs(const HeadGeometry& head, const std::vector<const Tensor*>& outputs) {
  std::vector<Shape> shapes;
  for (const Tensor* t : outputs) shapes.push_back(t->shape());
  HeadOutputs h;
  static_cast<HeadLayout&>(h) = head_layout(head, shapes);
  for (const Tensor* t : outputs) h.values.push_back(t->to_f32());
  return h;
}

std::vector<Detection> decode_head(const HeadGeometry& head, const HeadOutputs& outs, int64_t b, float conf) {
  std::vector<Detection> dets;
  switch (head.arch) {
    case DetectorArch::UltraFace: decode_ultraface(head, outs, b, conf, dets); break;
    case DetectorArch::BlazeFace: decode_blazeface(head, outs, b, conf, dets); break;
    case DetectorArch::Scrfd:
    case DetectorArch::Yunet: decode_faces(head, outs, b, conf, dets); break;
    default: decode_yolo(head, outs, b, conf, dets);
  }
  return dets;
}

DetectionBoxesAttrs detection_boxes_attrs(const ir::Node& node) {
  DetectionBoxesAttrs a;
  a.head.arch = parse_detector_arch(node.attr_s("head", ""));
  a.head.width = int(node.attr_i("width", 0));
  a.head.height = int(node.attr_i("height", 0));
  a.head.classes = int(node.attr_i("classes", 1));
  a.max_detections = node.attr_i("max_detections", 300);
  KESTREL_CHECK(a.head.arch != DetectorArch::Auto, node.where(), ": attribute 'head' must name the detector head");
  KESTREL_CHECK(a.head.width > 0 && a.head.height > 0 && a.head.classes > 0 && a.max_detections > 0, node.where(),
                ": width, height, classes and max_detections must be positive, got ", a.head.width, ", ",
                a.head.height, ", ", a.head.classes, " and ", a.max_detections);
  return a;
}

namespace {

float threshold(const KernelContext& ctx, int at, const char* what) {
  const Tensor& t = ctx.input(at);
  if (t.numel() != 1 || t.dtype() != DType::Float32) ctx.fail(what, " must be one float32 value, got ", shape_str(t.shape()));
  const float v = t.to_f32()[0];
  if (!(v >= 0 && v <= 1)) ctx.fail(what, " must lie in [0, 1], got ", v);
  return v;
}

void run_detection_boxes(KernelContext& ctx) {
  const DetectionBoxesAttrs a = detection_boxes_attrs(ctx.node);
  const float conf = threshold(ctx, 0, "score_threshold"), iou_threshold = threshold(ctx, 1, "iou_threshold");
  std::vector<const Tensor*> outs;
  for (int i = 2; i < ctx.num_inputs(); ++i) outs.push_back(&ctx.input(i));
  const HeadOutputs h = head_outputs(a.head, outs);
  const int64_t D = kDetectionColumns + 2 * h.keypoints;
  Tensor& table = ctx.output(0, DType::Float32, {h.batch, a.max_detections, D});
  Tensor& count = ctx.output(1, DType::Int64, {h.batch});
  float* t = table.data<float>();
  std::fill(t, t + table.numel(), 0.f);
  for (int64_t b = 0; b < h.batch; ++b) {
    const std::vector<Detection> kept =
        nms_per_class(decode_head(a.head, h, b, conf), iou_threshold, size_t(a.max_detections));
    count.data<int64_t>()[b] = int64_t(kept.size());
    for (size_t k = 0; k < kept.size(); ++k) {
      float* r = t + (b * a.max_detections + int64_t(k)) * D;
      const Detection& d = kept[k];
      std::copy(d.box.begin(), d.box.end(), r);
      r[4] = d.score;
      r[5] = float(d.class_id);
      for (size_t p = 0; p < d.keypoints.size() && int(p) < h.keypoints; ++p) {
        r[6 + 2 * p] = d.keypoints[p][0];
        r[7 + 2 * p] = d.keypoints[p][1];
      }
    }
  }
}

}  // namespace

KESTREL_OP(DetectionBoxes, {.domain = "com.kestrel", .run = run_detection_boxes});

}  // namespace kestrel::ops

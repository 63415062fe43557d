// com.kestrel DetectionBoxes (ops/detection_boxes.cpp) on the GPU: the
// head's outputs decoded part by part into candidates (shaders/
// detection_decode.comp), then NMS, one workgroup a photo
// (shaders/detection_nms.comp), so a detector's run reads back its boxes
// (300 rows a photo) instead of the head's tensors (YOLOv8n: 705,600 values).
#include <cmath>

#include "backends/vulkan/op.h"
#include "ops/detection_boxes.h"

namespace kestrel::vulkan {
namespace {

struct DecodePush {
  uint32_t base, n;
  uint32_t rows, row0, total, rec, batch;
  uint32_t per_a, per_o, per_b, per_k;
  int32_t classes, stride, cols, anchors, cells, keypoints, box_width;
  float width, height;
};

struct NmsPush {
  uint32_t total, rec, batch, max_out, cols, keypoints;
};

// One dispatch's share of the head: which outputs it reads (binding 0:
// scores or the table, 1: objectness, 2: boxes, 3: keypoints; -1: none)
// and its rows.
struct Part {
  int a = -1, o = -1, b = -1, k = -1;
  int64_t rows = 0;
  int stride = 0, cols = 0, anchors = 1, cells = 0, box_width = 0;
};

std::vector<Part> parts_of(const ops::HeadGeometry& head, const ops::HeadLayout& l) {
  using A = ops::DetectorArch;
  std::vector<Part> parts;
  switch (head.arch) {
    case A::YoloV8: parts.push_back({0, -1, -1, -1, l.per_photo[0] / (4 + head.classes)}); break;
    case A::Yolox:
    case A::YoloV5: parts.push_back({0, -1, -1, -1, l.per_photo[0] / (5 + head.classes)}); break;
    case A::UltraFace: parts.push_back({0, -1, 1, -1, l.per_photo[0] / 2}); break;
    case A::BlazeFace:
      for (int g = 0; g < 2; ++g) {
        Part p{g, -1, 2 + g, -1, l.per_photo[size_t(g)]};
        p.anchors = g == 0 ? 2 : 6;
        p.cells = int(std::lround(std::sqrt(double(p.rows / p.anchors))));
        p.box_width = int(l.per_photo[size_t(2 + g)] / p.rows);
        parts.push_back(p);
      }
      break;
    case A::Scrfd:
    case A::Yunet: {
      const bool scrfd = head.arch == A::Scrfd;
      for (int si = 0; si < 3; ++si) {
        Part p;
        p.a = si;
        p.o = scrfd ? -1 : 3 + si;
        p.b = (scrfd ? 3 : 6) + si;
        p.k = (scrfd ? 6 : 9) + si;
        p.stride = ops::kHeadStrides[si];
        p.cols = head.width / p.stride;
        p.anchors = scrfd ? 2 : 1;
        p.rows = int64_t(p.cols) * (head.height / p.stride) * p.anchors;
        parts.push_back(p);
      }
      break;
    }
    case A::Auto: break;
  }
  return parts;
}

void detection_boxes(OpContext& ctx) {
  const ops::DetectionBoxesAttrs attrs = ops::detection_boxes_attrs(ctx.node);
  const ops::HeadGeometry& head = attrs.head;
  std::vector<Shape> shapes;
  for (int i = 2; i < ctx.num_inputs(); ++i) {
    if (!ctx.input(i).is_float()) ctx.fail("head output ", i - 2, " is ", dtype_name(ctx.input(i).dtype), ", not float");
    shapes.push_back(ctx.input(i).shape);
  }
  for (int i = 0; i < 2; ++i)
    if (ctx.input(i).dtype != DType::Float32 || ctx.input(i).numel() != 1)
      ctx.fail(i == 0 ? "score_threshold" : "iou_threshold", " must be one float32 value");
  const ops::HeadLayout layout = ops::head_layout(head, shapes);
  const std::vector<Part> parts = parts_of(head, layout);
  int64_t total = 0;
  for (const Part& p : parts) total += p.rows;
  const int64_t B = layout.batch, M = attrs.max_detections;
  const int64_t cols = ops::kDetectionColumns + 2 * layout.keypoints, rec = 7 + 2 * int64_t(layout.keypoints);
  if (layout.keypoints > 6) ctx.unsupported("more than 6 keypoints a box (", layout.keypoints, ")");
  const int64_t words = B + B * total * rec;
  if (words >= (int64_t(1) << 31) || B * M * cols >= (int64_t(1) << 31)) ctx.unsupported("past 32-bit indexing");
  GpuTensor& table = ctx.output(0, DType::Float32, {B, M, cols});
  GpuTensor& count = ctx.output(1, DType::Int64, {B});
  if (B == 0) return;
  GpuTensor scratch = ctx.temp_words(size_t(words));
  const int arch = int(head.arch);

  DecodePush zero{};
  ctx.dispatch_elements("detection_decode", {0, arch}, {In(ctx.input(2)), In(ctx.input(2)), In(ctx.input(2)),
                                                        In(ctx.input(2)), In(ctx.input(0)), Out(scratch)},
                        &zero, sizeof zero, uint64_t(B));
  int64_t row0 = 0;
  for (const Part& p : parts) {
    auto bound = [&](int at) -> const GpuTensor& { return ctx.input(2 + (at < 0 ? p.a : at)); };
    auto per = [&](int at) { return uint32_t(at < 0 ? 0 : layout.per_photo[size_t(at)]); };
    DecodePush d{};
    d.rows = uint32_t(p.rows);
    d.row0 = uint32_t(row0);
    d.total = uint32_t(total);
    d.rec = uint32_t(rec);
    d.batch = uint32_t(B);
    d.per_a = per(p.a);
    d.per_o = per(p.o);
    d.per_b = per(p.b);
    d.per_k = per(p.k);
    d.classes = head.classes;
    d.stride = p.stride;
    d.cols = p.cols;
    d.anchors = p.anchors;
    d.cells = p.cells;
    d.keypoints = layout.keypoints;
    d.box_width = p.box_width;
    d.width = float(head.width);
    d.height = float(head.height);
    ctx.dispatch_elements("detection_decode", {1, arch},
                          {In(bound(p.a)), In(bound(p.o)), In(bound(p.b)), In(bound(p.k)), In(ctx.input(0)), Out(scratch)},
                          &d, sizeof d, uint64_t(B * p.rows));
    row0 += p.rows;
  }
  NmsPush n{uint32_t(total), uint32_t(rec), uint32_t(B), uint32_t(M), uint32_t(cols), uint32_t(layout.keypoints)};
  ctx.dispatch("detection_nms", {}, {In(ctx.input(1)), Out(scratch), Out(table), Out(count)}, &n, sizeof n,
               uint32_t(B));
}

}  // namespace

// Float32 always: the thresholds are compared as the CPU compares them, and
// the boxes are a selection, not values float16 could round.
KESTREL_VK_OP(DetectionBoxes, {.domain = "com.kestrel", .record = detection_boxes, .float32_node = true});

}  // namespace kestrel::vulkan

// com.kestrel DetectionBoxes: each head's decode and the class-wise NMS on
// random head outputs, against the reference (ops/detection_boxes.cpp).
// Values in narrow ranges make many small, overlapping boxes of few classes,
// so NMS removes most candidates and a wrong order or a wrong removal moves
// whole rows (errors of the boxes' size, far past the tolerance). The
// decode's arithmetic is the CPU's but for exp and the division of the IoU,
// which a GPU computes within a few ulps: rows agree to 1e-4 of the largest
// value; the counts exactly.
#include "harness.h"

namespace kestrel::backend_ops {
namespace {

std::function<void(onnx::NodeProto&)> head(const char* name, int width, int height, int classes, int max_out = 300) {
  return [=](onnx::NodeProto& n) {
    attr_s(n, "head", name);
    attr_i(n, "width", width);
    attr_i(n, "height", height);
    attr_i(n, "classes", classes);
    attr_i(n, "max_detections", max_out);
  };
}

OpCase detection(std::string label, std::vector<InputSpec> outputs, std::function<void(onnx::NodeProto&)> attrs,
                 float conf = 0.3f, float iou = 0.45f) {
  std::vector<InputSpec> in = {floats("score_threshold", {conf}), floats("iou_threshold", {iou})};
  for (InputSpec& s : outputs) in.push_back(std::move(s));
  return {.label = "DetectionBoxes " + label, .op = "DetectionBoxes", .opset = 1, .inputs = std::move(in),
          .attrs = std::move(attrs), .outputs = 2, .fp32_abs = 1e-4, .fp16_abs = 1e-4, .domain = "com.kestrel"};
}

// A face head's outputs for a 64x64 input: `kinds` outputs of each width
// for strides 8, 16, 32 (`anchors` a cell), [B, rows, width].
std::vector<InputSpec> face_outputs(const std::vector<std::pair<std::string, int64_t>>& kinds, int64_t batch,
                                    int64_t anchors) {
  std::vector<InputSpec> v;
  for (const auto& [kind, width] : kinds)
    for (int64_t s : {8, 16, 32}) {
      const int64_t rows = (64 / s) * (64 / s) * anchors;
      const bool score = width == 1;
      v.push_back(rnd(kind + "_" + std::to_string(s), {batch, rows, width}, score ? 0 : -0.5f, score ? 1 : 1.5f));
    }
  return v;
}

std::vector<OpCase> cases() {
  std::vector<OpCase> v;
  // YOLOv8 [B, 4 + C, N]: centres and sizes in [0, 1) pixels, 3 classes.
  v.push_back(detection("yolov8 [2,7,500]", {rnd("table", {2, 7, 500}, 0, 1)}, head("yolov8", 64, 64, 3)));
  v.push_back(detection("yolov8 max 5, threshold 0", {rnd("table", {1, 6, 300}, 0, 1)}, head("yolov8", 64, 64, 2, 5),
                        0.0f, 0.3f));
  // YOLOX: 84 grid cells of a 64x64 input; offsets and log sizes in [-1, 1).
  v.push_back(detection("yolox [2,84,7]", {rnd("table", {2, 84, 7}, -1, 1)}, head("yolox", 64, 64, 2), 0.1f));
  v.push_back(detection("yolov5 [1,120,9]", {rnd("table", {1, 120, 9}, 0, 1)}, head("yolov5", 64, 64, 4), 0.2f));
  v.push_back(detection("scrfd 64x64 batch 2", face_outputs({{"score", 1}, {"bbox", 4}, {"kps", 10}}, 2, 2),
                        head("scrfd", 64, 64, 1), 0.5f, 0.3f));
  v.push_back(detection("yunet 64x64", face_outputs({{"cls", 1}, {"obj", 1}, {"bbox", 4}, {"kps", 10}}, 1, 1),
                        head("yunet", 64, 64, 1), 0.4f, 0.3f));
  v.push_back(detection("ultraface [2,100]", {rnd("scores", {2, 100, 2}, 0, 1), rnd("boxes", {2, 100, 4}, 0, 0.3f)},
                        head("ultraface", 64, 48, 1), 0.5f, 0.3f));
  // BlazeFace 16x16: a 4x4 grid of 2 anchors and a 2x2 grid of 6; logits in
  // [-3, 3), offsets and sizes in pixels, six keypoints.
  v.push_back(detection("blazeface 16x16",
                        {rnd("s0", {1, 32, 1}, -3, 3), rnd("s1", {1, 24, 1}, -3, 3), rnd("b0", {1, 32, 16}, -2, 4),
                         rnd("b1", {1, 24, 16}, -2, 4)},
                        head("blazeface", 16, 16, 1), 0.4f, 0.2f));
  return v;
}

const bool registered = add_cases(cases());

}  // namespace
}  // namespace kestrel::backend_ops

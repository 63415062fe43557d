// A detector head's raw outputs to its boxes: the decode of each head Kestrel
// reads and the class-wise non-maximum suppression after it, for one photo
// of a batch. com.kestrel DetectionBoxes (detection_boxes.cpp) is these as
// one node, so that a detector's graph ends in its boxes and a GPU backend
// reads back the boxes, not the head's tensors (vision/detect.cpp appends it).
#pragma once
#include <array>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace kestrel::ops {

enum class DetectorArch {
  Auto,    // recognized from the outputs (each head's table has a shape of its own)
  YoloV8,  // Ultralytics YOLOv8 / YOLO11: [B, 4 + C, N] (cx, cy, w, h, class scores)
  Yolox,   // YOLOX: [B, N, 5 + C] raw per grid cell (offsets, log sizes, objectness, classes)
  YoloV5,  // YOLOv5 style: [B, N, 5 + C] decoded (cx, cy, w, h, objectness, classes), 3 anchors a cell
  Scrfd,   // SCRFD faces: score_S, bbox_S, kps_S per stride S (distances from 2 anchors a cell)
  Yunet,   // YuNet faces: cls_S, obj_S, bbox_S, kps_S per stride S (one prior a cell)
  UltraFace,  // UltraFace (Ultra-Light-Fast): scores [B, N, 2] and decoded corner boxes [B, N, 4] in 0..1
  BlazeFace,  // MediaPipe BlazeFace: scores [B, N, 1] and boxes with six keypoints [B, N, 16] for two anchor
              // grids (2 anchors a cell on the finer, 6 on the coarser), offsets from the anchors in input pixels
};
// "auto", "yolov8", "yolox", "yolov5", "scrfd", "yunet", "ultraface", "blazeface" (CLI, Python, the op's
// attribute); anything else fails naming the choices.
DetectorArch parse_detector_arch(const std::string& name);
const char* detector_arch_name(DetectorArch arch);

// The grid heads' strides: cells of 8, 16 and 32 input pixels.
constexpr int kHeadStrides[] = {8, 16, 32};

// What decoding a head needs besides its outputs.
struct HeadGeometry {
  DetectorArch arch = DetectorArch::Auto;
  int width = 0, height = 0;  // the model's input, in pixels
  int classes = 0;
};

struct Detection {
  int class_id = 0;
  float score = 0;
  std::array<float, 4> box{};                  // x1, y1, x2, y2
  std::vector<std::array<float, 2>> keypoints;  // faces: eyes, nose, mouth corners
};

// Intersection over union of two x1, y1, x2, y2 boxes (0 when either is empty).
float iou(const std::array<float, 4>& a, const std::array<float, 4>& b);

// Keeps, class by class, each box that overlaps no higher-scoring box of its
// class by more than `iou_threshold`; the result is sorted by score, highest
// first (ties: the earlier box first), at most `max_out` of them.
std::vector<Detection> nms_per_class(std::vector<Detection> dets, float iou_threshold, size_t max_out = 300);

// How a head's outputs (in its order: SCRFD: score, bbox, kps; YuNet: cls,
// obj, bbox, kps, each for strides 8, 16, 32; UltraFace: scores, boxes;
// BlazeFace: the finer and the coarser grid's scores, then their boxes; the
// YOLO heads: their table) hold the photos of a batch.
struct HeadLayout {
  std::vector<int64_t> per_photo;  // each output's elements per photo
  int64_t batch = 0;
  int keypoints = 0;  // per box: 5 (SCRFD, YuNet), BlazeFace's from its box width, else 0
};
// Checks the outputs' shapes against the head; fails naming the output and
// what it expected.
HeadLayout head_layout(const HeadGeometry& head, const std::vector<Shape>& shapes);

// The outputs themselves, as float32.
struct HeadOutputs : HeadLayout {
  std::vector<std::vector<float>> values;  // each output's elements
};
HeadOutputs head_outputs(const HeadGeometry& head, const std::vector<const Tensor*>& outputs);

// Photo b's boxes scoring at least `conf`, in the model's input pixels, in
// the head's row order (the order NMS breaks ties in), before NMS.
std::vector<Detection> decode_head(const HeadGeometry& head, const HeadOutputs& outs, int64_t b, float conf);

// The node's attributes: head, width, height, classes, max_detections.
struct DetectionBoxesAttrs {
  HeadGeometry head;
  int64_t max_detections = 300;
};
DetectionBoxesAttrs detection_boxes_attrs(const ir::Node& node);

// Columns of the node's detections output: x1, y1, x2, y2, score, class,
// then x, y of each keypoint.
constexpr int kDetectionColumns = 6;

}  // namespace kestrel::ops

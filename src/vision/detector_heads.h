// The object detectors Kestrel decodes, told apart by their outputs' shapes:
// what each expects of a photo (size, channel order, scaling, letterbox) and
// how its output becomes boxes in the model's input pixels.
#pragma once
#include <string>
#include <vector>

#include "runtime/session.h"
#include "vision/detection.h"
#include "vision/image.h"
#include "vision/letterbox.h"

namespace kestrel::vision {

enum class DetectorArch {
  Auto,    // recognized from the outputs (each head's table has a shape of its own)
  YoloV8,  // Ultralytics YOLOv8 / YOLO11: [1, 4 + C, N] (cx, cy, w, h, class scores)
  Yolox,   // YOLOX: [1, N, 5 + C] raw per grid cell (offsets, log sizes, objectness, classes)
  YoloV5,  // YOLOv5 style: [1, N, 5 + C] decoded (cx, cy, w, h, objectness, classes), 3 anchors a cell
  Scrfd,   // SCRFD faces: score_S, bbox_S, kps_S per stride S (distances from 2 anchors a cell)
  Yunet,   // YuNet faces: cls_S, obj_S, bbox_S, kps_S per stride S (one prior a cell)
  UltraFace,  // UltraFace (Ultra-Light-Fast): scores [1, N, 2] and decoded corner boxes [1, N, 4] in 0..1
  BlazeFace,  // MediaPipe BlazeFace: scores [1, N, 1] and boxes with six keypoints [1, N, 16] for two anchor
              // grids (2 anchors a cell on the finer, 6 on the coarser), offsets from the anchors in input pixels
};
// "auto", "yolov8", "yolox", "yolov5", "scrfd", "yunet", "ultraface", "blazeface" (CLI, Python); anything else fails
// naming the choices.
DetectorArch parse_detector_arch(const std::string& name);
const char* detector_arch_name(DetectorArch arch);

struct DetectorSpec {
  DetectorArch arch = DetectorArch::Auto;
  std::string input;       // the image input's name
  int width = 0, height = 0;  // its pixels
  Normalize norm;          // from 0..255 pixels
  Layout layout = Layout::NCHW;  // BlazeFace's TensorFlow export takes NHWC
  LetterboxAlign align = LetterboxAlign::Center;
  float fill = 114;        // the letterbox's grey (0..255)
  int classes = 0;
  std::vector<std::string> names;  // one per class
  // Face detectors: the session's outputs in the head's order (SCRFD: score,
  // bbox, kps; YuNet: cls, obj, bbox, kps; each for strides 8, 16, 32;
  // UltraFace: scores, boxes; BlazeFace: the finer and the coarser grid's
  // scores, then their boxes).
  std::vector<size_t> outputs;
};

// Reads the detector from the session's input and first output (and the
// model's "names" metadata). `arch` other than Auto is the head the caller
// expects: a model whose outputs are another head's fails, naming both. A
// model it cannot place fails with what it saw and what it looked for.
// `width` x `height` (0: the model's, else 640 x 640) sizes an input whose
// height and width are open (SCRFD, YuNet's dynamic export); a fixed input
// must be asked for at its own size.
DetectorSpec recognize_detector(const Session& s, DetectorArch arch, int width = 0, int height = 0);

// The boxes scoring at least `conf`, in the model's input pixels, before NMS.
std::vector<Detection> decode_detections(const DetectorSpec& spec, const std::vector<Tensor>& outputs, float conf);

}  // namespace kestrel::vision

// What a detector finds: boxes with a class and a score (and, for faces,
// keypoints), and the class-wise non-maximum suppression every detector's
// output goes through.
#pragma once
#include <array>
#include <string>
#include <vector>

namespace kestrel::vision {

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

// The 80 COCO class names in the order COCO-trained detectors number them.
const std::vector<std::string>& coco_names();
// Class names from an Ultralytics model's "names" metadata, a Python dict
// literal ("{0: 'person', 1: 'bicycle', ...}"); empty when it is not one.
std::vector<std::string> names_from_metadata(const std::string& value);

}  // namespace kestrel::vision

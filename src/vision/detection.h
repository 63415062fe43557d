// What a detector finds: boxes with a class and a score (and, for faces,
// keypoints), and the names of their classes.
#pragma once
#include <string>
#include <vector>

#include "ops/detection_boxes.h"

namespace kestrel::vision {

// The box record, the IoU and the class-wise NMS every detector's output goes
// through live with the op that runs them (ops/detection_boxes.h).
using ops::Detection;
using ops::iou;
using ops::nms_per_class;

// The 80 COCO class names in the order COCO-trained detectors number them.
const std::vector<std::string>& coco_names();
// Class names from an Ultralytics model's "names" metadata, a Python dict
// literal ("{0: 'person', 1: 'bicycle', ...}"); empty when it is not one.
std::vector<std::string> names_from_metadata(const std::string& value);

}  // namespace kestrel::vision

// Marking detections on a photo: a box outline per detection in its class's
// colour, keypoints as small squares.
#pragma once
#include <vector>

#include "vision/detection.h"
#include "vision/image.h"

namespace kestrel::vision {

void draw_detections(Image& photo, const std::vector<Detection>& dets);

}  // namespace kestrel::vision

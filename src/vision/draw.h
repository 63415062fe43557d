// Marking detections on a photo: a box outline per detection in its class's
// colour with a tag naming its class (names[class_id]) and score, keypoints
// as small squares; text boxes as four-sided outlines, each tagged with its
// number (1, 2, ... in the order given).
#pragma once
#include <string>
#include <vector>

#include "vision/detection.h"
#include "vision/image.h"
#include "vision/quad.h"

namespace kestrel::vision {

void draw_detections(Image& photo, const std::vector<Detection>& dets, const std::vector<std::string>& names);
// Each quad's four edges, in one colour per quad, and its number.
void draw_quads(Image& photo, const std::vector<Quad>& quads);

}  // namespace kestrel::vision

// Marking detections on a photo: a box outline per detection in its class's
// colour, keypoints as small squares; text boxes as four-sided outlines.
#pragma once
#include <vector>

#include "vision/detection.h"
#include "vision/image.h"
#include "vision/quad.h"

namespace kestrel::vision {

void draw_detections(Image& photo, const std::vector<Detection>& dets);
// Each quad's four edges, in one colour per quad.
void draw_quads(Image& photo, const std::vector<Quad>& quads);

}  // namespace kestrel::vision

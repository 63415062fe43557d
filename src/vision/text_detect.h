// Text detection as PP-OCR does it with a DB (differentiable binarization)
// model: the photo resized so its longer side is at most `limit_side`, each
// side rounded to a multiple of 32, and the model's probability map turned
// into boxes: threshold, connected regions, each region's rectangle of least
// area, scored by the mean probability inside it, grown ("unclipped") by
// area x ratio / perimeter and mapped back to the photo's pixels.
#pragma once
#include <vector>

#include "core/tensor.h"
#include "vision/image.h"
#include "vision/quad.h"

namespace kestrel::vision {

// PaddleOCR's defaults (tools/infer/utility.py: det_db_*, det_limit_*).
struct TextDetectOptions {
  int limit_side = 960;
  float threshold = 0.3f;      // a pixel is text above this probability
  float box_threshold = 0.6f;  // a region's mean probability to keep it
  float unclip_ratio = 1.5f;
  int max_candidates = 1000;
};

struct TextBox {
  Quad quad;  // photo pixels: top-left, top-right, bottom-right, bottom-left
  float score = 0;
};

// The size the detector is given for a photo of width x height.
void text_detect_size(int width, int height, const TextDetectOptions& opt, int* det_width, int* det_height);
// The detector's input tensor: [1,3,H,W], BGR, ImageNet mean and std.
Tensor text_detect_input(const Image& photo, int det_width, int det_height);
// Boxes from the [1,1,H,W] probability map, in photo pixels, ordered top to
// bottom and, within a line (tops less than 10 pixels apart), left to right.
std::vector<TextBox> text_boxes(const Tensor& prob, int photo_width, int photo_height, const TextDetectOptions& opt);

}  // namespace kestrel::vision

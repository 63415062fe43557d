// Text recognition as PP-OCR does it: each detected box cut out of the photo
// and straightened, turned upright (tall crops by a quarter turn; with the
// optional direction classifier, upside-down ones by a half turn), resized to
// the recognizer's height, and its per-step character probabilities read
// with CTC: the best class per step, repeats merged, blanks dropped.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "vision/image.h"
#include "vision/quad.h"

namespace kestrel::vision {

// The box's content as an upright image as wide as its longer top or bottom
// edge and as tall as its longer side edge (PP-OCR's get_rotate_crop_image);
// a crop at least 1.5 times taller than wide is turned a quarter turn.
Image crop_quad(const Image& photo, const Quad& q);
// The photo turned by 180 degrees.
Image rotated_half_turn(const Image& img);

// [1,3,height,W]: the crop resized to `height` keeping its aspect ratio (W
// at most max_width; at least 1), BGR, (x / 255 - 0.5) / 0.5; to_width > 0
// pads it with zeros on the right to that width, as PP-OCR's batches do.
Tensor text_line_input(const Image& crop, int height, int max_width, int to_width = 0);

// The recognizer's classes: index 0 is CTC's blank, then the dictionary's
// lines in order, then a space where the model has one more class.
class CharacterSet {
 public:
  // `classes`: the model's output size; the dictionary must have classes - 1
  // or classes - 2 (plus the space) entries.
  CharacterSet(const std::string& dictionary_path, int classes);
  const std::string& at(int class_id) const { return chars_[size_t(class_id)]; }
  int size() const { return int(chars_.size()); }

 private:
  std::vector<std::string> chars_;
};

struct TextLine {
  std::string text;
  float score = 0;  // the mean probability of the characters kept
};
// CTC greedy decoding of one sequence's [T, classes] probabilities.
TextLine ctc_decode(const float* probs, int steps, int classes, const CharacterSet& chars);

}  // namespace kestrel::vision

#include "vision/text_recognize.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/error.h"

namespace kestrel::vision {
namespace {

// Bilinear sample with the border repeated outward.
void sample(const Image& img, float x, float y, float* out) {
  x = std::clamp(x, 0.f, float(img.width - 1));
  y = std::clamp(y, 0.f, float(img.height - 1));
  const int x0 = int(x), y0 = int(y), x1 = std::min(x0 + 1, img.width - 1), y1 = std::min(y0 + 1, img.height - 1);
  const float fx = x - float(x0), fy = y - float(y0);
  for (int c = 0; c < img.channels; ++c) {
    const float top = img.at(y0, x0, c) + fx * (img.at(y0, x1, c) - img.at(y0, x0, c));
    const float bottom = img.at(y1, x0, c) + fx * (img.at(y1, x1, c) - img.at(y1, x0, c));
    out[c] = top + fy * (bottom - top);
  }
}

}  // namespace

Image crop_quad(const Image& photo, const Quad& q) {
  const int w = std::max(1, int(std::max(distance(q[0], q[1]), distance(q[2], q[3]))));
  const int h = std::max(1, int(std::max(distance(q[0], q[3]), distance(q[1], q[2]))));
  // The corners' bilinear blend: for the rectangles the detector gives (a
  // parallelogram after rounding at most) the same map as PP-OCR's
  // perspective warp from the four corners to the crop's.
  Image crop(w, h, photo.channels);
  for (int v = 0; v < h; ++v)
    for (int u = 0; u < w; ++u) {
      const float s = float(u) / float(w), t = float(v) / float(h);
      const float x = (1 - s) * (1 - t) * q[0].x + s * (1 - t) * q[1].x + s * t * q[2].x + (1 - s) * t * q[3].x;
      const float y = (1 - s) * (1 - t) * q[0].y + s * (1 - t) * q[1].y + s * t * q[2].y + (1 - s) * t * q[3].y;
      sample(photo, x, y, &crop.at(v, u, 0));
    }
  if (float(h) < 1.5f * float(w)) return crop;
  // A quarter turn anticlockwise (NumPy's rot90): the right column becomes the top row.
  Image turned(h, w, crop.channels);
  for (int y = 0; y < turned.height; ++y)
    for (int x = 0; x < turned.width; ++x)
      for (int c = 0; c < crop.channels; ++c) turned.at(y, x, c) = crop.at(x, crop.width - 1 - y, c);
  return turned;
}

Image rotated_half_turn(const Image& img) {
  Image out(img.width, img.height, img.channels);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      for (int c = 0; c < img.channels; ++c) out.at(img.height - 1 - y, img.width - 1 - x, c) = img.at(y, x, c);
  return out;
}

Tensor text_line_input(const Image& crop, int height, int max_width, int to_width) {
  const double ratio = double(crop.width) / double(crop.height);
  const int width = std::clamp(int(std::ceil(height * ratio)), 1, max_width);
  Normalize norm;
  norm.mean = {0.5f, 0.5f, 0.5f, 0};
  norm.std = {0.5f, 0.5f, 0.5f, 1};
  norm.bgr = true;
  Tensor line = to_tensor(resize_bilinear(crop, width, height), Layout::NCHW, norm);
  if (to_width <= width) return line;
  Tensor padded(DType::Float32, {1, 3, height, to_width});  // zeros: the grey PP-OCR pads with
  const float* from = line.data<float>();
  float* to = padded.data<float>();
  for (int row = 0; row < 3 * height; ++row)
    std::copy(from + size_t(row) * size_t(width), from + size_t(row + 1) * size_t(width), to + size_t(row) * size_t(to_width));
  return padded;
}

CharacterSet::CharacterSet(const std::string& path, int classes) {
  std::ifstream f(path, std::ios::binary);
  KESTREL_CHECK_AS(ErrorKind::NoSuchFile, f, "cannot open the character dictionary '", path, "'");
  chars_.push_back("");  // CTC's blank
  for (std::string line; std::getline(f, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
    chars_.push_back(line);
  }
  const int entries = int(chars_.size()) - 1;
  if (entries == classes - 2) chars_.push_back(" ");
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, int(chars_.size()) == classes, "the character dictionary '", path,
                   "' has ", entries, " entries, but the recognizer has ", classes,
                   " classes: it needs ", classes - 1, " (or ", classes - 2, " and a space) beside CTC's blank");
}

TextLine ctc_decode(const float* probs, int steps, int classes, const CharacterSet& chars) {
  KESTREL_CHECK(classes == chars.size(), "CTC decoding: ", classes, " classes but ", chars.size(), " characters");
  TextLine line;
  double sum = 0;
  int kept = 0, previous = -1;
  for (int t = 0; t < steps; ++t) {
    const float* row = probs + size_t(t) * size_t(classes);
    const int best = int(std::max_element(row, row + classes) - row);
    if (best != 0 && best != previous) {
      line.text += chars.at(best);
      sum += row[best];
      ++kept;
    }
    previous = best;
  }
  line.score = kept ? float(sum / kept) : 0.f;
  return line;
}

}  // namespace kestrel::vision

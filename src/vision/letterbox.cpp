#include "vision/letterbox.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kestrel::vision {

Image letterbox(const Image& photo, int width, int height, LetterboxAlign align, float fill, Letterbox* map) {
  KESTREL_CHECK(photo.width > 0 && photo.height > 0, "cannot letterbox an empty image (", photo.width, "x",
                photo.height, ")");
  // In double, as the detectors' own Python computes it: in float the
  // scaled size can come out a pixel off theirs, and every box with it.
  const double r = std::min(double(width) / photo.width, double(height) / photo.height);
  int w, h, x0, y0;
  if (align == LetterboxAlign::Stretch) {
    w = width;
    h = height;
    x0 = y0 = 0;
  } else if (align == LetterboxAlign::TopLeft) {
    w = int(photo.width * r);
    h = int(photo.height * r);
    x0 = y0 = 0;
  } else {
    // Ultralytics: Python's round (half to even) of the scaled size, half the
    // padding on each side rounded with a 0.1 nudge, so an odd pixel goes to
    // the right and bottom.
    w = int(std::nearbyint(photo.width * r));
    h = int(std::nearbyint(photo.height * r));
    x0 = int(std::nearbyint((width - w) / 2.0 - 0.1));
    y0 = int(std::nearbyint((height - h) / 2.0 - 0.1));
  }
  w = std::clamp(w, 1, width);
  h = std::clamp(h, 1, height);
  Image scaled = (w == photo.width && h == photo.height) ? photo : resize_bilinear(photo, w, h);
  Image out(width, height, photo.channels);
  std::fill(out.pixels.begin(), out.pixels.end(), fill);
  for (int y = 0; y < h; ++y)
    std::copy_n(&scaled.pixels[size_t(y) * size_t(w) * size_t(photo.channels)], size_t(w) * size_t(photo.channels),
                &out.at(y0 + y, x0, 0));
  if (map) {
    const bool stretched = align == LetterboxAlign::Stretch;
    *map = {stretched ? float(width) / float(photo.width) : float(r),
            stretched ? float(height) / float(photo.height) : float(r), float(x0), float(y0)};
  }
  return out;
}

}  // namespace kestrel::vision

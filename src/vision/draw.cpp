#include "vision/draw.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace kestrel::vision {
namespace {

// Twelve distinct colours, one per class id modulo 12.
constexpr std::array<std::array<float, 3>, 12> kPalette = {{{255, 56, 56},
                                                            {255, 157, 151},
                                                            {255, 112, 31},
                                                            {255, 178, 29},
                                                            {207, 210, 49},
                                                            {72, 249, 10},
                                                            {26, 147, 52},
                                                            {0, 212, 187},
                                                            {44, 153, 168},
                                                            {0, 194, 255},
                                                            {52, 69, 147},
                                                            {203, 56, 255}}};

void fill_rect(Image& img, int x0, int y0, int x1, int y1, const std::array<float, 3>& rgb) {
  x0 = std::max(x0, 0);
  y0 = std::max(y0, 0);
  x1 = std::min(x1, img.width);
  y1 = std::min(y1, img.height);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x)
      for (int c = 0; c < std::min(img.channels, 3); ++c) img.at(y, x, c) = rgb[size_t(c)];
}

// Lines about 1/300 of the photo's smaller side, at least 2 pixels.
int line_width(const Image& photo) { return std::max(2, std::min(photo.width, photo.height) / 300); }

}  // namespace

void draw_detections(Image& photo, const std::vector<Detection>& dets) {
  const int t = line_width(photo);
  for (const Detection& d : dets) {
    const auto& rgb = kPalette[size_t(d.class_id) % kPalette.size()];
    const int x0 = int(d.box[0]), y0 = int(d.box[1]), x1 = int(d.box[2]), y1 = int(d.box[3]);
    fill_rect(photo, x0, y0, x1, y0 + t, rgb);
    fill_rect(photo, x0, y1 - t, x1, y1, rgb);
    fill_rect(photo, x0, y0, x0 + t, y1, rgb);
    fill_rect(photo, x1 - t, y0, x1, y1, rgb);
    for (const auto& k : d.keypoints)
      fill_rect(photo, int(k[0]) - t, int(k[1]) - t, int(k[0]) + t + 1, int(k[1]) + t + 1, rgb);
  }
}

void draw_quads(Image& photo, const std::vector<Quad>& quads) {
  const int t = line_width(photo);
  for (size_t i = 0; i < quads.size(); ++i) {
    const auto& rgb = kPalette[i % kPalette.size()];
    for (size_t e = 0; e < 4; ++e) {
      // A square of side t stamped along the edge, a pixel apart.
      const Point a = quads[i][e], b = quads[i][(e + 1) % 4];
      const int steps = std::max(1, int(std::ceil(distance(a, b))));
      for (int s = 0; s <= steps; ++s) {
        const float f = float(s) / float(steps);
        const int x = int(a.x + f * (b.x - a.x)), y = int(a.y + f * (b.y - a.y));
        fill_rect(photo, x - t / 2, y - t / 2, x - t / 2 + t, y - t / 2 + t, rgb);
      }
    }
  }
}

}  // namespace kestrel::vision

#include "vision/draw.h"

#include <stb/stb_easy_font.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

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

// A tag's height at `scale`: stb_easy_font's glyphs span 9 units, descenders
// included, and the tag pads them by one unit each side.
int tag_height(int scale) { return 11 * scale; }

// `text` (ASCII) in stb_easy_font's built-in font, which builds each glyph
// from a few axis-aligned strokes (no font file to ship), each stroke
// `scale` pixels thick, on a filled tag whose top-left corner is (x, y).
void draw_tag(Image& img, int x, int y, const std::string& text, int scale, const std::array<float, 3>& bg) {
  std::string t = text;  // stb takes a char*
  const int pad = scale, w = stb_easy_font_width(t.data()) * scale;
  fill_rect(img, x, y, x + w + 2 * pad, y + tag_height(scale), bg);
  // Black or white strokes, whichever stands out more on the tag.
  const float luma = 0.299f * bg[0] + 0.587f * bg[1] + 0.114f * bg[2];
  const std::array<float, 3> ink = luma > 140 ? std::array<float, 3>{0, 0, 0} : std::array<float, 3>{255, 255, 255};
  std::vector<char> quads(t.size() * 300 + 64);  // stb's guide: about 270 bytes a character
  const int n = stb_easy_font_print(0, 0, t.data(), nullptr, quads.data(), int(quads.size()));
  for (int q = 0; q < n; ++q) {
    // Four vertices of (x, y, z, 4 colour bytes); the first and third are opposite corners.
    float v[16];
    std::memcpy(v, quads.data() + size_t(q) * sizeof v, sizeof v);
    fill_rect(img, x + pad + int(v[0]) * scale, y + pad + int(v[1]) * scale, x + pad + int(v[8]) * scale,
              y + pad + int(v[9]) * scale, ink);
  }
}

}  // namespace

void draw_detections(Image& photo, const std::vector<Detection>& dets, const std::vector<std::string>& names) {
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
    // The label and score on a tag in the box's colour, above the box where
    // the photo has room, else inside its top edge.
    const size_t id = size_t(d.class_id);
    char score[16];
    std::snprintf(score, sizeof score, " %.2f", double(d.score));
    const std::string label = (id < names.size() ? names[id] : "class " + std::to_string(id)) + score;
    const int scale = std::max(1, t / 2 + 1), tag_h = tag_height(scale);
    draw_tag(photo, std::max(x0, 0), y0 - tag_h >= 0 ? y0 - tag_h : std::max(y0, 0), label, scale, rgb);
  }
}

void draw_quads(Image& photo, const std::vector<Quad>& quads) {
  const int t = line_width(photo);
  for (size_t i = 0; i < quads.size(); ++i) {
    const auto& rgb = kPalette[i % kPalette.size()];
    // Its number in the output's order, on a tag at its first corner (the
    // text itself may be any script; the built-in font is ASCII).
    const int scale = std::max(1, t / 2 + 1);
    draw_tag(photo, std::max(int(quads[i][0].x), 0), std::max(int(quads[i][0].y) - tag_height(scale), 0),
             std::to_string(i + 1), scale, rgb);
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

#include "vision/text_detect.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kestrel::vision {
namespace {

// Each 8-connected region of pixels above the threshold, as its pixels'
// coordinates (the outer contours OpenCV's findContours traces, whose
// rectangle of least area is the same as the region's).
std::vector<std::vector<Point>> regions(const float* prob, int W, int H, float threshold, int max_regions) {
  std::vector<uint8_t> seen(size_t(W) * size_t(H), 0);
  std::vector<std::vector<Point>> out;
  std::vector<int> stack;
  for (int start = 0; start < W * H && int(out.size()) < max_regions; ++start) {
    if (seen[size_t(start)] || !(prob[start] > threshold)) continue;
    std::vector<Point> pts;
    stack.assign(1, start);
    seen[size_t(start)] = 1;
    while (!stack.empty()) {
      const int at = stack.back();
      stack.pop_back();
      const int x = at % W, y = at / W;
      pts.push_back({float(x), float(y)});
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int nx = x + dx, ny = y + dy;
          if (nx < 0 || ny < 0 || nx >= W || ny >= H) continue;
          const int n = ny * W + nx;
          if (!seen[size_t(n)] && prob[n] > threshold) {
            seen[size_t(n)] = 1;
            stack.push_back(n);
          }
        }
    }
    out.push_back(std::move(pts));
  }
  return out;
}

// The mean probability over the pixels inside the quad (PP-OCR's "fast"
// box score: the quad's bounding window, masked by the quad).
float mean_inside(const float* prob, int W, int H, const Quad& q) {
  float x0 = q[0].x, x1 = q[0].x, y0 = q[0].y, y1 = q[0].y;
  for (const Point& p : q) x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
  const int xa = std::clamp(int(std::floor(x0)), 0, W - 1), xb = std::clamp(int(std::ceil(x1)), 0, W - 1);
  const int ya = std::clamp(int(std::floor(y0)), 0, H - 1), yb = std::clamp(int(std::ceil(y1)), 0, H - 1);
  double sum = 0;
  int n = 0;
  for (int y = ya; y <= yb; ++y)
    for (int x = xa; x <= xb; ++x)
      if (inside(q, {float(x), float(y)})) sum += prob[size_t(y) * size_t(W) + size_t(x)], ++n;
  return n ? float(sum / n) : 0.f;
}

}  // namespace

void text_detect_size(int width, int height, const TextDetectOptions& opt, int* det_width, int* det_height) {
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, width > 0 && height > 0, "text detection needs a photo, got ",
                   width, "x", height);
  const double ratio = std::max(width, height) > opt.limit_side ? double(opt.limit_side) / std::max(width, height) : 1.0;
  // Python's round (halves to even), as PP-OCR's resize does it.
  auto to32 = [&](int side) { return std::max(int(std::nearbyint(int(side * ratio) / 32.0)) * 32, 32); };
  *det_width = to32(width);
  *det_height = to32(height);
}

Tensor text_detect_input(const Image& photo, int det_width, int det_height) {
  Normalize norm;
  norm.mean = {0.485f, 0.456f, 0.406f, 0};
  norm.std = {0.229f, 0.224f, 0.225f, 1};
  norm.bgr = true;  // PP-OCR reads photos as OpenCV does and normalizes in that order
  return to_tensor(resize_bilinear(photo, det_width, det_height), Layout::NCHW, norm);
}

std::vector<TextBox> text_boxes(const Tensor& prob, int photo_width, int photo_height, const TextDetectOptions& opt) {
  KESTREL_CHECK(prob.rank() == 4 && prob.dim(0) == 1 && prob.dim(1) == 1,
                "the text detector's output should be a [1, 1, H, W] probability map, got ", shape_str(prob.shape()));
  const int W = int(prob.dim(3)), H = int(prob.dim(2));
  const std::vector<float> p = prob.to_f32();
  const float sx = float(photo_width) / float(W), sy = float(photo_height) / float(H);
  constexpr float kMinSize = 3;  // PP-OCR's: shorter sides below this are noise
  std::vector<TextBox> boxes;
  for (const std::vector<Point>& region : regions(p.data(), W, H, opt.threshold, opt.max_candidates)) {
    const RotatedRect rect = min_area_rect(region);
    if (rect.short_side() < kMinSize) continue;
    const float score = mean_inside(p.data(), W, H, ordered_corners(rect));
    if (score < opt.box_threshold) continue;
    const float area = rect.width * rect.height, perimeter = 2 * (rect.width + rect.height);
    const RotatedRect grown = rect.grown(area * opt.unclip_ratio / perimeter);
    if (grown.short_side() < kMinSize + 2) continue;
    TextBox b;
    b.score = score;
    b.quad = ordered_corners(grown);
    for (Point& c : b.quad) {
      c.x = std::clamp(std::nearbyint(c.x * sx), 0.f, float(photo_width - 1));
      c.y = std::clamp(std::nearbyint(c.y * sy), 0.f, float(photo_height - 1));
    }
    if (distance(b.quad[0], b.quad[1]) <= 3 || distance(b.quad[0], b.quad[3]) <= 3) continue;
    boxes.push_back(b);
  }
  // Reading order: by top, then swapped left to right within a line.
  std::sort(boxes.begin(), boxes.end(), [](const TextBox& a, const TextBox& b) {
    return a.quad[0].y < b.quad[0].y || (a.quad[0].y == b.quad[0].y && a.quad[0].x < b.quad[0].x);
  });
  for (size_t i = 0; i + 1 < boxes.size(); ++i)
    for (size_t j = i + 1; j-- > 0;) {
      if (std::abs(boxes[j + 1].quad[0].y - boxes[j].quad[0].y) < 10 && boxes[j + 1].quad[0].x < boxes[j].quad[0].x)
        std::swap(boxes[j], boxes[j + 1]);
      else
        break;
    }
  return boxes;
}

}  // namespace kestrel::vision

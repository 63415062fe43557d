// Plane geometry for text boxes: the convex hull of a region's pixels, the
// rotated rectangle of least area around it (what OpenCV's minAreaRect
// gives), and four-corner boxes ordered top-left, top-right, bottom-right,
// bottom-left as PP-OCR orders them.
#pragma once
#include <array>
#include <cmath>
#include <vector>

namespace kestrel::vision {

struct Point {
  float x = 0, y = 0;
};
using Quad = std::array<Point, 4>;

// Euclidean distance. Not std::hypot: glibc 2.35 gave hypot a new symbol
// version, and the wheel promises glibc 2.34 (scripts/wheel.sh).
inline float distance(Point a, Point b) {
  const float dx = a.x - b.x, dy = a.y - b.y;
  return std::sqrt(dx * dx + dy * dy);
}

// Counter-clockwise in image coordinates (y down: clockwise on screen),
// without collinear points; fewer than three points come back as given.
std::vector<Point> convex_hull(std::vector<Point> points);

struct RotatedRect {
  Point center;
  float width = 0, height = 0;  // along the two edge directions
  float angle = 0;              // radians, of the `width` edge
  float short_side() const { return width < height ? width : height; }
  // The rectangle grown by `d` on every side (what offsetting it outward by d
  // and taking the rectangle of least area around the result gives).
  RotatedRect grown(float d) const { return {center, width + 2 * d, height + 2 * d, angle}; }
};

// The rectangle of least area holding every point (rotating calipers over
// the hull's edges: one side of the best rectangle lies on an edge).
RotatedRect min_area_rect(const std::vector<Point>& points);

// Corners ordered as PP-OCR's get_mini_boxes does: the two leftmost by x,
// the upper of them first; then the upper and lower of the two rightmost.
Quad ordered_corners(const RotatedRect& r);

// Whether p lies inside or on the edge of the convex quad q.
bool inside(const Quad& q, Point p);

}  // namespace kestrel::vision

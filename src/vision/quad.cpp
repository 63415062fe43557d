#include "vision/quad.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kestrel::vision {
namespace {

double cross(Point o, Point a, Point b) {
  return double(a.x - o.x) * double(b.y - o.y) - double(a.y - o.y) * double(b.x - o.x);
}

}  // namespace

std::vector<Point> convex_hull(std::vector<Point> pts) {
  // Andrew's monotone chain.
  std::sort(pts.begin(), pts.end(), [](Point a, Point b) { return a.x < b.x || (a.x == b.x && a.y < b.y); });
  pts.erase(std::unique(pts.begin(), pts.end(), [](Point a, Point b) { return a.x == b.x && a.y == b.y; }),
            pts.end());
  if (pts.size() < 3) return pts;
  std::vector<Point> hull(2 * pts.size());
  size_t k = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    while (k >= 2 && cross(hull[k - 2], hull[k - 1], pts[i]) <= 0) --k;
    hull[k++] = pts[i];
  }
  for (size_t i = pts.size() - 1, lower = k + 1; i-- > 0;) {
    while (k >= lower && cross(hull[k - 2], hull[k - 1], pts[i]) <= 0) --k;
    hull[k++] = pts[i];
  }
  hull.resize(k - 1);  // the last point repeats the first
  return hull;
}

RotatedRect min_area_rect(const std::vector<Point>& points) {
  const std::vector<Point> hull = convex_hull(points);
  RotatedRect best;
  if (hull.empty()) return best;
  if (hull.size() == 1) return {hull[0], 0, 0, 0};
  double best_area = std::numeric_limits<double>::max();
  for (size_t i = 0; i < hull.size(); ++i) {
    const Point a = hull[i], b = hull[(i + 1) % hull.size()];
    const double dx = double(b.x) - a.x, dy = double(b.y) - a.y, len = std::sqrt(dx * dx + dy * dy);
    if (len == 0) continue;
    // The edge's direction u and its normal v; the hull's extent along each.
    const double ux = (b.x - a.x) / len, uy = (b.y - a.y) / len, vx = -uy, vy = ux;
    double u0 = std::numeric_limits<double>::max(), u1 = -u0, v0 = u0, v1 = -u0;
    for (const Point& p : hull) {
      const double u = p.x * ux + p.y * uy, v = p.x * vx + p.y * vy;
      u0 = std::min(u0, u), u1 = std::max(u1, u), v0 = std::min(v0, v), v1 = std::max(v1, v);
    }
    const double area = (u1 - u0) * (v1 - v0);
    if (area < best_area) {
      best_area = area;
      const double cu = (u0 + u1) / 2, cv = (v0 + v1) / 2;
      best.center = {float(cu * ux + cv * vx), float(cu * uy + cv * vy)};
      best.width = float(u1 - u0);
      best.height = float(v1 - v0);
      best.angle = float(std::atan2(uy, ux));
    }
  }
  return best;
}

Quad ordered_corners(const RotatedRect& r) {
  const float c = std::cos(r.angle), s = std::sin(r.angle);
  const float hw = r.width / 2, hh = r.height / 2;
  std::array<Point, 4> p;
  const float du[4] = {-hw, hw, hw, -hw}, dv[4] = {-hh, -hh, hh, hh};
  for (int i = 0; i < 4; ++i) p[size_t(i)] = {r.center.x + du[i] * c - dv[i] * s, r.center.y + du[i] * s + dv[i] * c};
  std::sort(p.begin(), p.end(), [](Point a, Point b) { return a.x < b.x; });
  Quad q;
  const bool left_upper_first = p[0].y <= p[1].y, right_upper_first = p[2].y <= p[3].y;
  q[0] = left_upper_first ? p[0] : p[1];
  q[3] = left_upper_first ? p[1] : p[0];
  q[1] = right_upper_first ? p[2] : p[3];
  q[2] = right_upper_first ? p[3] : p[2];
  return q;
}

bool inside(const Quad& q, Point p) {
  // Inside a convex polygon: on the same side of every edge (either winding).
  bool pos = false, neg = false;
  for (size_t i = 0; i < 4; ++i) {
    const double c = cross(q[i], q[(i + 1) % 4], p);
    pos |= c > 1e-6;
    neg |= c < -1e-6;
  }
  return !(pos && neg);
}

}  // namespace kestrel::vision

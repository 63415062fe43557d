#include "vision/detect.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "vision/letterbox.h"

namespace kestrel::vision {
namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Detector::Detector(std::shared_ptr<Session> session, DetectorArch arch, int width, int height)
    : session_(std::move(session)), spec_(recognize_detector(*session_, arch, width, height)) {}

DetectResult Detector::detect(const Image& photo, float conf, float iou) const {
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, conf >= 0 && conf <= 1 && iou >= 0 && iou <= 1,
                   "score and IoU thresholds must lie in [0, 1], got ", conf, " and ", iou);
  DetectResult r;
  r.width = photo.width;
  r.height = photo.height;
  auto t0 = std::chrono::steady_clock::now();
  Letterbox map;
  const Image boxed = letterbox(photo, spec_.width, spec_.height, spec_.align, spec_.fill, &map);
  r.input = to_tensor(boxed, spec_.layout, spec_.norm);
  r.pre_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  const std::vector<Tensor> outs = session_->run({{spec_.input, r.input}});
  r.run_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  r.detections = nms_per_class(decode_detections(spec_, outs, conf), iou);
  const float W = float(photo.width), H = float(photo.height);
  for (Detection& d : r.detections) {
    d.box = {std::clamp(map.photo_x(d.box[0]), 0.f, W), std::clamp(map.photo_y(d.box[1]), 0.f, H),
             std::clamp(map.photo_x(d.box[2]), 0.f, W), std::clamp(map.photo_y(d.box[3]), 0.f, H)};
    for (auto& k : d.keypoints) k = {map.photo_x(k[0]), map.photo_y(k[1])};
  }
  r.post_ms = ms_since(t0);
  return r;
}

}  // namespace kestrel::vision

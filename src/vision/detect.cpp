#include "vision/detect.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "vision/letterbox.h"

namespace kestrel::vision {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool open_batch(const TensorInfo& t) { return t.shape && !t.shape->empty() && !(*t.shape)[0].known(); }

// Photo b's part of a batched tensor [B, ...], as [1, ...].
Tensor batch_item(const Tensor& t, int64_t b) {
  Shape one = t.shape();
  one[0] = 1;
  Tensor item = Tensor::uninitialized(t.dtype(), one);
  std::memcpy(item.raw(), t.raw() + size_t(b) * item.nbytes(), item.nbytes());
  return item;
}

// The photos' [1, ...] inputs stacked along the first dim.
Tensor stacked(const std::vector<PreparedPhoto>& photos) {
  Shape shape = photos[0].input.shape();
  shape[0] = int64_t(photos.size());
  Tensor t = Tensor::uninitialized(photos[0].input.dtype(), shape);
  const size_t each = photos[0].input.nbytes();
  for (size_t i = 0; i < photos.size(); ++i) std::memcpy(t.raw() + i * each, photos[i].input.raw(), each);
  return t;
}

}  // namespace

Detector::Detector(std::shared_ptr<Session> session, DetectorArch arch, int width, int height)
    : session_(std::move(session)), spec_(recognize_detector(*session_, arch, width, height)) {
  batches_ = open_batch(session_->inputs()[0]) &&
             std::all_of(session_->outputs().begin(), session_->outputs().end(), open_batch);
}

PreparedPhoto Detector::prepare(const Image& photo) const {
  const auto t0 = std::chrono::steady_clock::now();
  PreparedPhoto p;
  p.width = photo.width;
  p.height = photo.height;
  const Image boxed = letterbox(photo, spec_.width, spec_.height, spec_.align, spec_.fill, &p.map);
  p.input = to_tensor(boxed, spec_.layout, spec_.norm);
  p.pre_ms = ms_since(t0);
  return p;
}

// Each photo's outputs. A batch whose outputs do not come back with the
// batch as their first dim (an export that folds it away) runs again photo
// by photo: the right answer, one run each.
std::vector<std::vector<Tensor>> Detector::run_batch(const std::vector<PreparedPhoto>& photos) const {
  std::vector<std::vector<Tensor>> per_photo;
  if (batches_ && photos.size() > 1) {
    const std::vector<Tensor> outs = session_->run({{spec_.input, stacked(photos)}});
    const int64_t B = int64_t(photos.size());
    if (std::all_of(outs.begin(), outs.end(), [&](const Tensor& t) { return t.rank() >= 1 && t.dim(0) == B; })) {
      for (int64_t b = 0; b < B; ++b) {
        per_photo.emplace_back();
        for (const Tensor& t : outs) per_photo.back().push_back(batch_item(t, b));
      }
      return per_photo;
    }
  }
  for (const PreparedPhoto& p : photos) per_photo.push_back(session_->run({{spec_.input, p.input}}));
  return per_photo;
}

std::vector<DetectResult> Detector::detect(const std::vector<PreparedPhoto>& photos, float conf, float iou) const {
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, conf >= 0 && conf <= 1 && iou >= 0 && iou <= 1,
                   "score and IoU thresholds must lie in [0, 1], got ", conf, " and ", iou);
  std::vector<DetectResult> results;
  if (photos.empty()) return results;
  auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::vector<Tensor>> outs = run_batch(photos);
  const double run_ms = ms_since(t0) / double(photos.size());
  for (size_t i = 0; i < photos.size(); ++i) {
    const PreparedPhoto& p = photos[i];
    DetectResult r;
    r.width = p.width;
    r.height = p.height;
    r.input = p.input;
    r.pre_ms = p.pre_ms;
    r.run_ms = run_ms;
    t0 = std::chrono::steady_clock::now();
    r.detections = nms_per_class(decode_detections(spec_, outs[i], conf), iou);
    const float W = float(p.width), H = float(p.height);
    for (Detection& d : r.detections) {
      d.box = {std::clamp(p.map.photo_x(d.box[0]), 0.f, W), std::clamp(p.map.photo_y(d.box[1]), 0.f, H),
               std::clamp(p.map.photo_x(d.box[2]), 0.f, W), std::clamp(p.map.photo_y(d.box[3]), 0.f, H)};
      for (auto& k : d.keypoints) k = {p.map.photo_x(k[0]), p.map.photo_y(k[1])};
    }
    r.post_ms = ms_since(t0);
    results.push_back(std::move(r));
  }
  return results;
}

DetectResult Detector::detect(const Image& photo, float conf, float iou) const {
  return std::move(detect(std::vector<PreparedPhoto>{prepare(photo)}, conf, iou)[0]);
}

}  // namespace kestrel::vision

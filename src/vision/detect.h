// A photo to boxes in its own pixels: letterbox into the detector's input,
// run it, decode its head, class-wise NMS, and the boxes mapped back.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "vision/detector_heads.h"

namespace kestrel::vision {

struct DetectResult {
  int width = 0, height = 0;  // the photo's
  std::vector<Detection> detections;  // photo pixels, clipped to it, best first
  Tensor input;                       // what the model was given
  double pre_ms = 0, run_ms = 0, post_ms = 0;
};

class Detector {
 public:
  // `arch` Auto: recognized from the model; width x height: the input size
  // where the model leaves it open (recognize_detector).
  Detector(std::shared_ptr<Session> session, DetectorArch arch, int width = 0, int height = 0);
  const DetectorSpec& spec() const { return spec_; }
  Session& session() { return *session_; }
  // conf: the lowest score kept; iou: the overlap above which NMS drops a box.
  DetectResult detect(const Image& photo, float conf, float iou) const;

 private:
  std::shared_ptr<Session> session_;
  DetectorSpec spec_;
};

}  // namespace kestrel::vision

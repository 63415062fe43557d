// A photo to boxes in its own pixels: letterbox into the detector's input,
// run it, and the boxes mapped back. The head's decode and class-wise NMS
// are a node appended to the detector's graph (ops/detection_boxes.h), so
// they run where the model runs and a run returns the boxes.
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
  Tensor input;                       // what the model was given for this photo
  // pre: letterbox and tensor; run: the model's run (a batch's divided
  // among its photos); post: decode, NMS and the boxes mapped back.
  double pre_ms = 0, run_ms = 0, post_ms = 0;
};

// A photo made ready for the detector: its input tensor ([1, ...]) and how
// to map the input's pixels back to the photo's.
struct PreparedPhoto {
  int width = 0, height = 0;
  Tensor input;
  Letterbox map;
  double pre_ms = 0;
};

class Detector {
 public:
  // Loads the model at `path` with the decode of its head appended. `arch`
  // Auto: recognized from the model; width x height: the input size where
  // the model leaves it open (recognize_detector).
  Detector(const std::string& path, const SessionOptions& opts, DetectorArch arch, int width = 0, int height = 0);
  const DetectorSpec& spec() const { return spec_; }
  Session& session() { return *session_; }
  // True when the model's batch dimension is open (its input's first dim and
  // every output's): several photos then go through one run.
  bool batches() const { return batches_; }
  // conf: the lowest score kept; iou: the overlap above which NMS drops a box.
  DetectResult detect(const Image& photo, float conf, float iou) const;
  // The letterbox and input tensor of one photo: safe on any thread, so a
  // caller can prepare the next photos while the model runs.
  PreparedPhoto prepare(const Image& photo) const;
  // The photos in one run where the model batches, else one run each.
  std::vector<DetectResult> detect(const std::vector<PreparedPhoto>& photos, float conf, float iou) const;

 private:
  std::unique_ptr<Session> session_;
  DetectorSpec spec_;
  bool batches_ = false;
};

}  // namespace kestrel::vision

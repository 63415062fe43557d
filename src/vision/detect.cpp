#include "vision/detect.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "vision/letterbox.h"

namespace kestrel::vision {
namespace {

// The graph's inputs and outputs the appended node adds.
constexpr const char* kScoreThreshold = "kestrel.score_threshold";
constexpr const char* kIouThreshold = "kestrel.iou_threshold";
constexpr const char* kDetections = "kestrel.detections";
constexpr const char* kDetectionCount = "kestrel.detection_count";
constexpr int64_t kMaxDetections = 300;  // per photo, as Ultralytics keeps

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool open_batch(const TensorInfo& t) { return t.shape && !t.shape->empty() && !(*t.shape)[0].known(); }

// The photos' [1, ...] inputs stacked along the first dim.
Tensor stacked(const std::vector<PreparedPhoto>& photos) {
  Shape shape = photos[0].input.shape();
  shape[0] = int64_t(photos.size());
  Tensor t = Tensor::uninitialized(photos[0].input.dtype(), shape);
  const size_t each = photos[0].input.nbytes();
  for (size_t i = 0; i < photos.size(); ++i) std::memcpy(t.raw() + i * each, photos[i].input.raw(), each);
  return t;
}

int new_value(ir::Graph& g, const char* name, DType dtype, std::vector<ir::Dim> shape) {
  KESTREL_CHECK(g.find(name) < 0, "the detector's graph already has a value named '", name, "'");
  const int id = g.add_value(name);
  g.values[size_t(id)].dtype = dtype;
  g.values[size_t(id)].shape = std::move(shape);
  return id;
}

ir::Attribute int_attr(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Int;
  a.i = v;
  return a;
}

// Ends the detector's graph in com.kestrel DetectionBoxes over the head's
// outputs: the graph's outputs become the boxes and their count, and the
// two thresholds become inputs, given with each run.
void append_detection_boxes(onnx_io::Model& m, const DetectorSpec& spec, int keypoints) {
  ir::Graph& g = m.graph;
  const std::vector<ir::Dim> one = {ir::Dim{1, ""}};
  const int score = new_value(g, kScoreThreshold, DType::Float32, one);
  const int iou = new_value(g, kIouThreshold, DType::Float32, one);
  const ir::Dim batch = (*g.values[size_t(g.inputs[0])].shape)[0];
  const int boxes = new_value(g, kDetections, DType::Float32,
                              {batch, ir::Dim{kMaxDetections, ""}, ir::Dim{ops::kDetectionColumns + 2 * keypoints, ""}});
  const int count = new_value(g, kDetectionCount, DType::Int64, {batch});
  ir::Node n;
  n.name = "kestrel.detection_boxes";
  n.op_type = "DetectionBoxes";
  n.domain = "com.kestrel";
  n.opset = 1;
  n.inputs = {score, iou};
  const std::vector<size_t> head = spec.outputs.empty() ? std::vector<size_t>{0} : spec.outputs;
  for (size_t o : head) n.inputs.push_back(g.outputs[o]);
  n.outputs = {boxes, count};
  ir::Attribute name;
  name.kind = ir::Attribute::Kind::String;
  name.s = detector_arch_name(spec.arch);
  n.attrs["head"] = name;
  n.attrs["width"] = int_attr(spec.width);
  n.attrs["height"] = int_attr(spec.height);
  n.attrs["classes"] = int_attr(spec.classes);
  n.attrs["max_detections"] = int_attr(kMaxDetections);
  g.nodes.push_back(std::move(n));
  g.inputs.push_back(score);
  g.inputs.push_back(iou);
  g.outputs = {boxes, count};
}

// Keypoints per box, from the head: the face heads' five, BlazeFace's from
// its boxes' width.
int head_keypoints(const ModelSignature& sig, const DetectorSpec& spec) {
  if (spec.arch == DetectorArch::Scrfd || spec.arch == DetectorArch::Yunet) return 5;
  if (spec.arch != DetectorArch::BlazeFace) return 0;
  return int(((*sig.outputs[spec.outputs[2]].shape)[2].value - 4) / 2);
}

}  // namespace

Detector::Detector(const std::string& path, const SessionOptions& opts, DetectorArch arch, int width, int height) {
  onnx_io::Model model = onnx_io::load_model_file(path);
  const ModelSignature sig = signature_of(model);
  spec_ = recognize_detector(sig, arch, width, height);
  batches_ = open_batch(sig.inputs[0]) && std::all_of(sig.outputs.begin(), sig.outputs.end(), open_batch);
  append_detection_boxes(model, spec_, head_keypoints(sig, spec_));
  session_ = Session::load_model(std::move(model), opts);
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

std::vector<DetectResult> Detector::detect(const std::vector<PreparedPhoto>& photos, float conf, float iou) const {
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, conf >= 0 && conf <= 1 && iou >= 0 && iou <= 1,
                   "score and IoU thresholds must lie in [0, 1], got ", conf, " and ", iou);
  std::vector<DetectResult> results;
  if (photos.empty()) return results;
  const std::map<std::string, Tensor> given = {{kScoreThreshold, Tensor::from_f32({1}, {conf})},
                                               {kIouThreshold, Tensor::from_f32({1}, {iou})}};
  // The photos in one run where the model batches, else a run each.
  std::vector<std::vector<Tensor>> outs;
  auto t0 = std::chrono::steady_clock::now();
  if (batches_ && photos.size() > 1) {
    std::map<std::string, Tensor> in = given;
    in[spec_.input] = stacked(photos);
    outs.push_back(session_->run(in));
  } else {
    for (const PreparedPhoto& p : photos) {
      std::map<std::string, Tensor> in = given;
      in[spec_.input] = p.input;
      outs.push_back(session_->run(in));
    }
  }
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
    // This photo's rows: its own run's first, or row i of the batch's.
    const std::vector<Tensor>& o = outs.size() == photos.size() ? outs[i] : outs[0];
    const int64_t b = outs.size() == photos.size() ? 0 : int64_t(i);
    const Tensor& table = o[0];
    const int64_t rows = table.dim(1), D = table.dim(2), keypoints = (D - ops::kDetectionColumns) / 2;
    const int64_t n = o[1].to_i64()[size_t(b)];
    KESTREL_CHECK(n >= 0 && n <= rows, "the detection node returned ", n, " boxes of at most ", rows);
    const float* t = table.data<float>() + b * rows * D;
    const float W = float(p.width), H = float(p.height);
    for (int64_t k = 0; k < n; ++k) {
      const float* row = t + k * D;
      Detection d;
      d.box = {std::clamp(p.map.photo_x(row[0]), 0.f, W), std::clamp(p.map.photo_y(row[1]), 0.f, H),
               std::clamp(p.map.photo_x(row[2]), 0.f, W), std::clamp(p.map.photo_y(row[3]), 0.f, H)};
      d.score = row[4];
      d.class_id = int(row[5]);
      for (int64_t j = 0; j < keypoints; ++j)
        d.keypoints.push_back({p.map.photo_x(row[6 + 2 * j]), p.map.photo_y(row[7 + 2 * j])});
      r.detections.push_back(std::move(d));
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

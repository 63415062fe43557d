#include "vision/detector_heads.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "onnx/loader.h"

namespace kestrel::vision {
namespace {

constexpr int kStrides[] = {8, 16, 32};

// Grid cells over the strides 8, 16 and 32 of a width x height input: the
// rows a one-anchor head (YOLOX) gives, a third of a three-anchor one's (YOLOv5).
int64_t grid_cells(int width, int height) {
  int64_t n = 0;
  for (int s : kStrides) n += int64_t(height / s) * int64_t(width / s);
  return n;
}

// The face detectors' outputs, found by the names their exporters give them
// (their shapes are open and alike): each prefix with the three strides.
bool outputs_named(const Session& s, const std::vector<std::string>& prefixes, std::vector<size_t>* order) {
  std::vector<size_t> found;
  for (const std::string& p : prefixes)
    for (int st : kStrides) {
      const std::string want = p + "_" + std::to_string(st);
      size_t i = 0;
      while (i < s.outputs().size() && s.outputs()[i].name != want) ++i;
      if (i == s.outputs().size()) return false;
      found.push_back(i);
    }
  *order = found;
  return true;
}

// UltraFace's two outputs: "scores" [1, N, 2] and "boxes" [1, N, 4].
bool ultraface_outputs(const Session& s, std::vector<size_t>* order) {
  std::vector<size_t> found;
  for (auto [name, width] : {std::pair<const char*, int64_t>{"scores", 2}, {"boxes", 4}})
    for (size_t i = 0; i < s.outputs().size(); ++i) {
      const TensorInfo& o = s.outputs()[i];
      if (o.name == name && o.shape && o.shape->size() == 3 && (*o.shape)[2].known() && (*o.shape)[2].value == width)
        found.push_back(i);
    }
  if (found.size() != 2) return false;
  *order = found;
  return true;
}

// BlazeFace's four outputs: scores [1, N, 1] and boxes [1, N, 4 + 2K] for
// each of its two anchor grids, in the model's order.
bool blazeface_outputs(const Session& s, std::vector<size_t>* order) {
  std::vector<size_t> scores, boxes;
  for (size_t i = 0; i < s.outputs().size(); ++i) {
    const auto& shape = s.outputs()[i].shape;
    if (!shape || shape->size() != 3 || !(*shape)[1].known() || !(*shape)[2].known()) return false;
    const int64_t width = (*shape)[2].value;
    (width == 1 ? scores : boxes).push_back(i);
    if (width != 1 && (width < 4 || width % 2)) return false;
  }
  if (scores.size() != 2 || boxes.size() != 2) return false;
  for (size_t g = 0; g < 2; ++g)
    if ((*s.outputs()[scores[g]].shape)[1].value != (*s.outputs()[boxes[g]].shape)[1].value) return false;
  *order = {scores[0], scores[1], boxes[0], boxes[1]};
  return true;
}

DetectorArch arch_of_outputs(const Session& s, int width, int height, std::vector<size_t>* order, std::string* why) {
  if (outputs_named(s, {"score", "bbox", "kps"}, order)) return DetectorArch::Scrfd;
  if (outputs_named(s, {"cls", "obj", "bbox", "kps"}, order)) return DetectorArch::Yunet;
  if (ultraface_outputs(s, order)) return DetectorArch::UltraFace;
  if (blazeface_outputs(s, order)) return DetectorArch::BlazeFace;
  const std::optional<std::vector<ir::Dim>>& shape = s.outputs()[0].shape;
  if (!shape || shape->size() != 3 || !(*shape)[1].known() || !(*shape)[2].known()) {
    *why = "its first output '" + s.outputs()[0].name + "' is " + s.outputs()[0].shape_str() +
           ", not a [1, rows, columns] table, and its outputs are not SCRFD's (score_8, bbox_8, kps_8, ...), "
           "YuNet's (cls_8, obj_8, bbox_8, kps_8, ...), UltraFace's (scores [1, N, 2], boxes [1, N, 4]) or BlazeFace's "
           "(two [1, N, 1] scores, two [1, N, 16] boxes)";
    return DetectorArch::Auto;
  }
  const auto& d = *shape;
  const int64_t a = d[1].value, b = d[2].value, cells = grid_cells(width, height);
  if (a > 4 && a < b) return DetectorArch::YoloV8;
  if (b > 5 && a == cells) return DetectorArch::Yolox;
  if (b > 5 && a == 3 * cells) return DetectorArch::YoloV5;
  *why = "its first output is " + s.outputs()[0].shape_str() + ": neither [1, 4 + C, N] (YOLOv8) nor [1, N, 5 + C] with N = " +
         std::to_string(cells) + " grid cells (YOLOX) or 3 x " + std::to_string(cells) + " (YOLOv5) for a " +
         std::to_string(width) + "x" + std::to_string(height) + " input";
  return DetectorArch::Auto;
}

// The input's pixels: fixed by the model, or asked for (else 640) where open.
void input_size(const TensorInfo& in, int width, int height, DetectorSpec* spec) {
  const bool nhwc = spec->layout == Layout::NHWC;
  const ir::Dim &h = (*in.shape)[nhwc ? 1 : 2], &w = (*in.shape)[nhwc ? 2 : 3];
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, width >= 0 && height >= 0 && (width == 0) == (height == 0),
                   "a detector's input size is a width and a height, got ", width, "x", height);
  const int want_w = width ? width : 640, want_h = height ? height : 640;
  spec->width = w.known() ? int(w.value) : want_w;
  spec->height = h.known() ? int(h.value) : want_h;
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, width == 0 || (spec->width == width && spec->height == height),
                   "input '", in.name, "' is ", in.shape_str(), ": it takes ", spec->width, "x", spec->height,
                   " images, not ", width, "x", height);
}

// Row `i` of output `t` holding `width` values per row, whatever its leading
// dims (SCRFD exports come with and without a batch of 1).
const float* row(const std::vector<float>& t, size_t i, size_t width) { return t.data() + i * width; }

}  // namespace

DetectorArch parse_detector_arch(const std::string& name) {
  for (DetectorArch a : {DetectorArch::Auto, DetectorArch::YoloV8, DetectorArch::Yolox, DetectorArch::YoloV5,
                         DetectorArch::Scrfd, DetectorArch::Yunet, DetectorArch::UltraFace, DetectorArch::BlazeFace})
    if (name == detector_arch_name(a)) return a;
  fail_as(ErrorKind::InvalidArgument, "unknown detector architecture '", name,
          "' (auto, yolov8, yolox, yolov5, scrfd, yunet, ultraface, blazeface)");
}

const char* detector_arch_name(DetectorArch arch) {
  switch (arch) {
    case DetectorArch::YoloV8: return "yolov8";
    case DetectorArch::Yolox: return "yolox";
    case DetectorArch::YoloV5: return "yolov5";
    case DetectorArch::Scrfd: return "scrfd";
    case DetectorArch::Yunet: return "yunet";
    case DetectorArch::UltraFace: return "ultraface";
    case DetectorArch::BlazeFace: return "blazeface";
    case DetectorArch::Auto: break;
  }
  return "auto";
}

DetectorSpec recognize_detector(const Session& s, DetectorArch arch, int width, int height) {
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, s.inputs().size() == 1 && !s.outputs().empty(),
                   "a detector takes one image input; this model has ", s.inputs().size(), " inputs");
  const TensorInfo& in = s.inputs()[0];
  auto channels_at = [&](size_t i) { return in.shape && in.shape->size() == 4 && (*in.shape)[i].value == 3; };
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, channels_at(1) || channels_at(3), "a detector takes a [1,3,H,W] (or ",
                   "[1,H,W,3]) image; input '", in.name, "' is ", in.shape_str());
  DetectorSpec spec;
  spec.input = in.name;
  spec.layout = channels_at(1) ? Layout::NCHW : Layout::NHWC;
  input_size(in, width, height, &spec);
  std::string why;
  const DetectorArch seen = arch_of_outputs(s, spec.width, spec.height, &spec.outputs, &why);
  // --arch may name the head, never contradict its outputs: each head is told
  // apart by its outputs' names or its table's shape, so a head they do not
  // fit would decode into wrong boxes.
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, seen != DetectorArch::Auto, "cannot tell which detector this is: ", why,
                   arch == DetectorArch::Auto
                       ? " (Kestrel reads yolov8, yolox, yolov5, scrfd, yunet, ultraface and blazeface heads)"
                       : "");
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, arch == DetectorArch::Auto || arch == seen, "--arch ",
                   detector_arch_name(arch), " does not fit the model: its outputs ('", s.outputs()[0].name, "' ",
                   s.outputs()[0].shape_str(), " first) are a ", detector_arch_name(seen), " head for a ",
                   spec.width, "x", spec.height, " input");
  spec.arch = seen;
  // The grid heads cut the input into cells of 8, 16 and 32 pixels.
  const bool grid_head = seen != DetectorArch::UltraFace && seen != DetectorArch::BlazeFace;
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, !grid_head || (spec.width % 32 == 0 && spec.height % 32 == 0),
                   "a ", detector_arch_name(seen), " detector's input size must be a multiple of 32 (its coarsest stride), got ",
                   spec.width, "x", spec.height);
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, spec.layout == Layout::NCHW || seen == DetectorArch::BlazeFace,
                   "a ", detector_arch_name(seen), " detector takes a [1,3,H,W] image; input '", in.name, "' is ",
                   in.shape_str());
  switch (seen) {
    case DetectorArch::BlazeFace:  // MediaPipe: RGB in -1..1, the photo centred, black around it
      spec.norm.scale = 2.0f / 255.0f;
      spec.norm.mean = {1, 1, 1, 0};
      spec.align = LetterboxAlign::Center;
      spec.fill = 0;
      spec.classes = 1;
      spec.names = {"face"};
      return spec;
    case DetectorArch::Scrfd:
    case DetectorArch::Yunet:
    case DetectorArch::UltraFace:
      if (seen == DetectorArch::Scrfd) {  // insightface's SCRFD: RGB, (x - 127.5) / 128
        spec.norm.scale = 1.0f / 128.0f;
        spec.norm.mean = {127.5f / 128.0f, 127.5f / 128.0f, 127.5f / 128.0f, 0};
      } else if (seen == DetectorArch::UltraFace) {  // Ultra-Light-Fast: RGB, (x - 127) / 128
        spec.norm.scale = 1.0f / 128.0f;
        spec.norm.mean = {127.0f / 128.0f, 127.0f / 128.0f, 127.0f / 128.0f, 0};
      } else {  // OpenCV's FaceDetectorYN: BGR, 0..255
        spec.norm.scale = 1;
        spec.norm.bgr = true;
      }
      // SCRFD and YuNet: the photo top-left, black around it; UltraFace:
      // stretched over the input, as its reference code resizes it.
      spec.align = seen == DetectorArch::UltraFace ? LetterboxAlign::Stretch : LetterboxAlign::TopLeft;
      spec.fill = 0;
      spec.classes = 1;
      spec.names = {"face"};
      return spec;
    case DetectorArch::Yolox:
      // YOLOX's own preprocessing: BGR, 0..255, photo in the top-left corner.
      spec.norm.scale = 1;
      spec.norm.bgr = true;
      spec.align = LetterboxAlign::TopLeft;
      break;
    default:
      spec.norm.scale = 1.0f / 255.0f;  // Ultralytics: RGB in 0..1, centred
      spec.align = LetterboxAlign::Center;
  }
  const auto& d = *s.outputs()[0].shape;
  spec.classes = int(seen == DetectorArch::YoloV8 ? d[1].value - 4 : d[2].value - 5);
  auto meta = s.model().metadata.find("names");
  if (meta != s.model().metadata.end()) spec.names = names_from_metadata(meta->second);
  if (int(spec.names.size()) != spec.classes && spec.classes == int(coco_names().size())) spec.names = coco_names();
  if (int(spec.names.size()) != spec.classes) {
    spec.names.clear();
    for (int c = 0; c < spec.classes; ++c) spec.names.push_back("class " + std::to_string(c));
  }
  return spec;
}

namespace {

std::array<float, 4> center_box(float cx, float cy, float w, float h) {
  return {cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
}

// One stride's output of a face head, checked to hold `rows` rows of `width`.
std::vector<float> stride_output(const std::vector<Tensor>& outs, size_t index, int64_t rows, int64_t width,
                                 int stride) {
  KESTREL_CHECK(index < outs.size(), "the detector returned ", outs.size(), " outputs; its head reads output ", index);
  const Tensor& t = outs[index];
  KESTREL_CHECK(t.numel() == rows * width, "face head output ", index, " at stride ", stride, " has shape ",
                shape_str(t.shape()), " where ", rows, " rows of ", width, " were expected");
  return t.to_f32();
}

std::vector<Detection> decode_faces(const DetectorSpec& spec, const std::vector<Tensor>& outs, float conf) {
  std::vector<Detection> dets;
  const bool scrfd = spec.arch == DetectorArch::Scrfd;
  const int anchors = scrfd ? 2 : 1;  // SCRFD's _bnkps models: two anchors per cell
  for (size_t si = 0; si < 3; ++si) {
    const int st = kStrides[si], cols = spec.width / st, rows_n = spec.height / st;
    const int64_t n = int64_t(cols) * rows_n * anchors;
    const size_t k = 3;  // outputs per kind
    // SCRFD: score, bbox, kps; YuNet: cls, obj, bbox, kps.
    const std::vector<float> score = stride_output(outs, spec.outputs[si], n, 1, st);
    const std::vector<float> obj = scrfd ? std::vector<float>() : stride_output(outs, spec.outputs[k + si], n, 1, st);
    const std::vector<float> bbox = stride_output(outs, spec.outputs[(scrfd ? 1 : 2) * k + si], n, 4, st);
    const std::vector<float> kps = stride_output(outs, spec.outputs[(scrfd ? 2 : 3) * k + si], n, 10, st);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t cell = i / anchors;
      const float gx = float(cell % cols), gy = float(cell / cols), s = float(st);
      // YuNet's score: the geometric mean of class and objectness (each clamped to 0..1), as OpenCV decodes it.
      const float sc = scrfd ? score[size_t(i)]
                             : std::sqrt(std::clamp(score[size_t(i)], 0.f, 1.f) * std::clamp(obj[size_t(i)], 0.f, 1.f));
      if (sc < conf) continue;
      const float* b = row(bbox, size_t(i), 4);
      const float* p = row(kps, size_t(i), 10);
      Detection d;
      d.score = sc;
      if (scrfd) {  // distances from the anchor's centre to the four sides, in strides
        const float cx = gx * s, cy = gy * s;
        d.box = {cx - b[0] * s, cy - b[1] * s, cx + b[2] * s, cy + b[3] * s};
        for (int j = 0; j < 5; ++j) d.keypoints.push_back({cx + p[2 * j] * s, cy + p[2 * j + 1] * s});
      } else {  // offsets from the cell's corner and log sizes, in strides
        d.box = center_box((gx + b[0]) * s, (gy + b[1]) * s, std::exp(b[2]) * s, std::exp(b[3]) * s);
        for (int j = 0; j < 5; ++j) d.keypoints.push_back({(gx + p[2 * j]) * s, (gy + p[2 * j + 1]) * s});
      }
      dets.push_back(std::move(d));
    }
  }
  return dets;
}

// UltraFace's boxes come decoded, as fractions of the input.
std::vector<Detection> decode_ultraface(const DetectorSpec& spec, const std::vector<Tensor>& outs, float conf) {
  KESTREL_CHECK(spec.outputs.size() == 2 && spec.outputs[1] < outs.size(), "UltraFace's head reads outputs ",
                spec.outputs.size() == 2 ? spec.outputs[1] : 0, " of ", outs.size());
  const Tensor &st = outs[spec.outputs[0]], &bt = outs[spec.outputs[1]];
  const int64_t n = st.numel() / 2;
  KESTREL_CHECK(st.numel() == 2 * n && bt.numel() == 4 * n, "UltraFace's scores ", shape_str(st.shape()),
                " and boxes ", shape_str(bt.shape()), " disagree on the number of priors");
  const std::vector<float> score = st.to_f32(), box = bt.to_f32();
  const float W = float(spec.width), H = float(spec.height);
  std::vector<Detection> dets;
  for (int64_t i = 0; i < n; ++i) {
    const float sc = score[size_t(2 * i + 1)];  // softmax over (background, face)
    if (sc < conf) continue;
    const float* b = row(box, size_t(i), 4);
    dets.push_back({0, sc, {b[0] * W, b[1] * H, b[2] * W, b[3] * H}, {}});
  }
  return dets;
}

// BlazeFace's anchors: cell centres of a square grid, 2 a cell on the finer
// grid and 6 on the coarser; each box and keypoint is an offset from its
// anchor in input pixels (MediaPipe's scales equal the input size), the
// score a logit.
std::vector<Detection> decode_blazeface(const DetectorSpec& spec, const std::vector<Tensor>& outs, float conf) {
  std::vector<Detection> dets;
  for (size_t g = 0; g < 2; ++g) {
    KESTREL_CHECK(spec.outputs.size() == 4 && spec.outputs[2 + g] < outs.size(), "BlazeFace's head reads four outputs");
    const Tensor &st = outs[spec.outputs[g]], &bt = outs[spec.outputs[2 + g]];
    const int anchors = g == 0 ? 2 : 6;
    const int64_t n = st.numel(), cells = int64_t(std::lround(std::sqrt(double(n / anchors))));
    KESTREL_CHECK(n > 0 && cells * cells * anchors == n && bt.numel() % n == 0, "BlazeFace's grid ", g, " has ", n,
                  " scores (", shape_str(st.shape()), "), not ", anchors, " anchors on each cell of a square grid");
    const size_t width = size_t(bt.numel() / n), keypoints = (width - 4) / 2;
    const std::vector<float> score = st.to_f32(), box = bt.to_f32();
    const float sx = float(spec.width) / float(cells), sy = float(spec.height) / float(cells);
    for (int64_t i = 0; i < n; ++i) {
      const float sc = 1.0f / (1.0f + std::exp(-std::clamp(score[size_t(i)], -100.f, 100.f)));
      if (sc < conf) continue;
      const int64_t cell = i / anchors;
      const float ax = (float(cell % cells) + 0.5f) * sx, ay = (float(cell / cells) + 0.5f) * sy;
      const float* b = row(box, size_t(i), width);
      Detection d;
      d.score = sc;
      d.box = center_box(ax + b[0], ay + b[1], b[2], b[3]);
      for (size_t k = 0; k < keypoints; ++k) d.keypoints.push_back({ax + b[4 + 2 * k], ay + b[5 + 2 * k]});
      dets.push_back(std::move(d));
    }
  }
  return dets;
}

}  // namespace

std::vector<Detection> decode_detections(const DetectorSpec& spec, const std::vector<Tensor>& outputs, float conf) {
  KESTREL_CHECK(!outputs.empty(), "the detector returned no outputs");
  if (spec.arch == DetectorArch::UltraFace) return decode_ultraface(spec, outputs, conf);
  if (spec.arch == DetectorArch::BlazeFace) return decode_blazeface(spec, outputs, conf);
  if (spec.arch == DetectorArch::Scrfd || spec.arch == DetectorArch::Yunet) return decode_faces(spec, outputs, conf);
  const Tensor& t = outputs[0];
  const std::vector<float> v = t.to_f32();
  const int C = spec.classes;
  std::vector<Detection> dets;
  if (spec.arch == DetectorArch::YoloV8) {
    KESTREL_CHECK(t.rank() == 3 && t.dim(1) == 4 + C, "YOLOv8 output of shape ", shape_str(t.shape()),
                  " where [1, ", 4 + C, ", N] was declared");
    const int64_t N = t.dim(2);
    for (int64_t n = 0; n < N; ++n) {
      int best = 0;
      for (int c = 1; c < C; ++c)
        if (v[size_t((4 + c) * N + n)] > v[size_t((4 + best) * N + n)]) best = c;
      const float score = v[size_t((4 + best) * N + n)];
      if (score < conf) continue;
      dets.push_back(
          {best, score, center_box(v[size_t(n)], v[size_t(N + n)], v[size_t(2 * N + n)], v[size_t(3 * N + n)]), {}});
    }
    return dets;
  }
  KESTREL_CHECK(t.rank() == 3 && t.dim(2) == 5 + C, detector_arch_name(spec.arch), " output of shape ",
                shape_str(t.shape()), " where [1, N, ", 5 + C, "] was declared");
  const int64_t N = t.dim(1), W = 5 + C;
  // YOLOX's rows are the grid cells of stride 8, then 16, then 32, row by row.
  std::vector<std::array<float, 3>> cells;  // gx, gy, stride
  if (spec.arch == DetectorArch::Yolox) {
    for (int s : kStrides)
      for (int gy = 0; gy < spec.height / s; ++gy)
        for (int gx = 0; gx < spec.width / s; ++gx) cells.push_back({float(gx), float(gy), float(s)});
    KESTREL_CHECK(int64_t(cells.size()) == N, "YOLOX output has ", N, " rows where its ", spec.width, "x", spec.height,
                  " input makes ", cells.size(), " grid cells");
  }
  for (int64_t n = 0; n < N; ++n) {
    const float* r = row(v, size_t(n), size_t(W));
    int best = 0;
    for (int c = 1; c < C; ++c)
      if (r[5 + c] > r[5 + best]) best = c;
    const float score = r[4] * r[5 + best];
    if (score < conf) continue;
    if (spec.arch == DetectorArch::Yolox) {
      const auto& g = cells[size_t(n)];
      dets.push_back({best, score,
                      center_box((r[0] + g[0]) * g[2], (r[1] + g[1]) * g[2], std::exp(r[2]) * g[2], std::exp(r[3]) * g[2]),
                      {}});
    } else {
      dets.push_back({best, score, center_box(r[0], r[1], r[2], r[3]), {}});
    }
  }
  return dets;
}

}  // namespace kestrel::vision

#include "vision/detector_heads.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "onnx/loader.h"

namespace kestrel::vision {
namespace {

// Grid cells over the strides 8, 16 and 32 of a width x height input: the
// rows a one-anchor head (YOLOX) gives, a third of a three-anchor one's (YOLOv5).
int64_t grid_cells(int width, int height) {
  int64_t n = 0;
  for (int s : ops::kHeadStrides) n += int64_t(height / s) * int64_t(width / s);
  return n;
}

// The face detectors' outputs, found by the names their exporters give them
// (their shapes are open and alike): each prefix with the three strides.
bool outputs_named(const ModelSignature& s, const std::vector<std::string>& prefixes, std::vector<size_t>* order) {
  std::vector<size_t> found;
  for (const std::string& p : prefixes)
    for (int st : ops::kHeadStrides) {
      const std::string want = p + "_" + std::to_string(st);
      size_t i = 0;
      while (i < s.outputs.size() && s.outputs[i].name != want) ++i;
      if (i == s.outputs.size()) return false;
      found.push_back(i);
    }
  *order = found;
  return true;
}

// UltraFace's two outputs: "scores" [1, N, 2] and "boxes" [1, N, 4].
bool ultraface_outputs(const ModelSignature& s, std::vector<size_t>* order) {
  std::vector<size_t> found;
  for (auto [name, width] : {std::pair<const char*, int64_t>{"scores", 2}, {"boxes", 4}})
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      const TensorInfo& o = s.outputs[i];
      if (o.name == name && o.shape && o.shape->size() == 3 && (*o.shape)[2].known() && (*o.shape)[2].value == width)
        found.push_back(i);
    }
  if (found.size() != 2) return false;
  *order = found;
  return true;
}

// BlazeFace's four outputs: scores [1, N, 1] and boxes [1, N, 4 + 2K] for
// each of its two anchor grids, in the model's order.
bool blazeface_outputs(const ModelSignature& s, std::vector<size_t>* order) {
  std::vector<size_t> scores, boxes;
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    const auto& shape = s.outputs[i].shape;
    if (!shape || shape->size() != 3 || !(*shape)[1].known() || !(*shape)[2].known()) return false;
    const int64_t width = (*shape)[2].value;
    (width == 1 ? scores : boxes).push_back(i);
    if (width != 1 && (width < 4 || width % 2)) return false;
  }
  if (scores.size() != 2 || boxes.size() != 2) return false;
  for (size_t g = 0; g < 2; ++g)
    if ((*s.outputs[scores[g]].shape)[1].value != (*s.outputs[boxes[g]].shape)[1].value) return false;
  *order = {scores[0], scores[1], boxes[0], boxes[1]};
  return true;
}

DetectorArch arch_of_outputs(const ModelSignature& s, int width, int height, std::vector<size_t>* order, std::string* why) {
  if (outputs_named(s, {"score", "bbox", "kps"}, order)) return DetectorArch::Scrfd;
  if (outputs_named(s, {"cls", "obj", "bbox", "kps"}, order)) return DetectorArch::Yunet;
  if (ultraface_outputs(s, order)) return DetectorArch::UltraFace;
  if (blazeface_outputs(s, order)) return DetectorArch::BlazeFace;
  const std::optional<std::vector<ir::Dim>>& shape = s.outputs[0].shape;
  if (!shape || shape->size() != 3 || !(*shape)[1].known() || !(*shape)[2].known()) {
    *why = "its first output '" + s.outputs[0].name + "' is " + s.outputs[0].shape_str() +
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
  *why = "its first output is " + s.outputs[0].shape_str() + ": neither [1, 4 + C, N] (YOLOv8) nor [1, N, 5 + C] with N = " +
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

}  // namespace

ModelSignature signature_of(const onnx_io::Model& model) {
  ModelSignature m;
  const ir::Graph& g = model.graph;
  for (int id : g.inputs) m.inputs.push_back({g.values[size_t(id)].name, g.values[size_t(id)].dtype, g.values[size_t(id)].shape});
  for (int id : g.outputs)
    m.outputs.push_back({g.values[size_t(id)].name, g.values[size_t(id)].dtype, g.values[size_t(id)].shape});
  m.metadata = model.metadata;
  return m;
}

DetectorSpec recognize_detector(const ModelSignature& s, DetectorArch arch, int width, int height) {
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, s.inputs.size() == 1 && !s.outputs.empty(),
                   "a detector takes one image input; this model has ", s.inputs.size(), " inputs");
  const TensorInfo& in = s.inputs[0];
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
                   detector_arch_name(arch), " does not fit the model: its outputs ('", s.outputs[0].name, "' ",
                   s.outputs[0].shape_str(), " first) are a ", detector_arch_name(seen), " head for a ",
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
  const auto& d = *s.outputs[0].shape;
  spec.classes = int(seen == DetectorArch::YoloV8 ? d[1].value - 4 : d[2].value - 5);
  auto meta = s.metadata.find("names");
  if (meta != s.metadata.end()) spec.names = names_from_metadata(meta->second);
  if (int(spec.names.size()) != spec.classes && spec.classes == int(coco_names().size())) spec.names = coco_names();
  if (int(spec.names.size()) != spec.classes) {
    spec.names.clear();
    for (int c = 0; c < spec.classes; ++c) spec.names.push_back("class " + std::to_string(c));
  }
  return spec;
}

}  // namespace kestrel::vision

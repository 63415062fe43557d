#include "vision/detector_heads.h"

#include <cmath>

#include "core/error.h"
#include "onnx/loader.h"

namespace kestrel::vision {
namespace {

// Grid cells over the strides 8, 16 and 32 of a width x height input: the
// rows a one-anchor head (YOLOX) gives, a third of a three-anchor one's (YOLOv5).
int64_t grid_cells(int width, int height) {
  int64_t n = 0;
  for (int s : {8, 16, 32}) n += int64_t(height / s) * int64_t(width / s);
  return n;
}

std::string dims_str(const std::vector<ir::Dim>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + (d[i].known() ? std::to_string(d[i].value) : std::string("?"));
  return s + "]";
}

DetectorArch arch_of_output(const std::vector<ir::Dim>& d, int width, int height, std::string* why) {
  if (d.size() != 3 || !d[1].known() || !d[2].known()) {
    *why = "its first output is " + dims_str(d) + ", not a [1, rows, columns] table";
    return DetectorArch::Auto;
  }
  const int64_t a = d[1].value, b = d[2].value, cells = grid_cells(width, height);
  if (a > 4 && a < b) return DetectorArch::YoloV8;
  if (b > 5 && a == cells) return DetectorArch::Yolox;
  if (b > 5 && a == 3 * cells) return DetectorArch::YoloV5;
  *why = "its first output is " + dims_str(d) + ": neither [1, 4 + C, N] (YOLOv8) nor [1, N, 5 + C] with N = " +
         std::to_string(cells) + " grid cells (YOLOX) or 3 x " + std::to_string(cells) + " (YOLOv5) for a " +
         std::to_string(width) + "x" + std::to_string(height) + " input";
  return DetectorArch::Auto;
}

}  // namespace

DetectorArch parse_detector_arch(const std::string& name) {
  if (name == "auto") return DetectorArch::Auto;
  if (name == "yolov8") return DetectorArch::YoloV8;
  if (name == "yolox") return DetectorArch::Yolox;
  if (name == "yolov5") return DetectorArch::YoloV5;
  fail_as(ErrorKind::InvalidArgument, "unknown detector architecture '", name, "' (auto, yolov8, yolox, yolov5)");
}

const char* detector_arch_name(DetectorArch arch) {
  switch (arch) {
    case DetectorArch::YoloV8: return "yolov8";
    case DetectorArch::Yolox: return "yolox";
    case DetectorArch::YoloV5: return "yolov5";
    case DetectorArch::Auto: break;
  }
  return "auto";
}

DetectorSpec recognize_detector(const Session& s, DetectorArch arch) {
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, s.inputs().size() == 1 && !s.outputs().empty(),
                   "a detector takes one image input; this model has ", s.inputs().size(), " inputs");
  const TensorInfo& in = s.inputs()[0];
  const bool image_input = in.shape && in.shape->size() == 4 && (*in.shape)[1].known() && (*in.shape)[1].value == 3 &&
                           (*in.shape)[2].known() && (*in.shape)[3].known();
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, image_input, "a detector takes a [1,3,H,W] image with fixed H and W; input '",
                   in.name, "' is ", in.shape_str());
  DetectorSpec spec;
  spec.input = in.name;
  spec.height = int((*in.shape)[2].value);
  spec.width = int((*in.shape)[3].value);
  const TensorInfo& out = s.outputs()[0];
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, out.shape.has_value(), "the detector's first output '", out.name,
                   "' has no known shape");
  std::string why;
  const DetectorArch seen = arch_of_output(*out.shape, spec.width, spec.height, &why);
  // --arch may name the head, never contradict its shape: each head's table
  // is told apart by its rows and columns alone, so a head the shape does
  // not fit would decode into wrong boxes.
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, seen != DetectorArch::Auto, "cannot tell which detector this is: ", why,
                   arch == DetectorArch::Auto ? " (Kestrel reads yolov8, yolox and yolov5 heads)" : "");
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, arch == DetectorArch::Auto || arch == seen, "--arch ",
                   detector_arch_name(arch), " does not fit the model: its first output '", out.name, "' ",
                   out.shape_str(), " is a ", detector_arch_name(seen), " head for a ", spec.width, "x", spec.height,
                   " input");
  arch = seen;
  const auto& d = *out.shape;
  spec.arch = arch;
  spec.classes = int(arch == DetectorArch::YoloV8 ? d[1].value - 4 : d[2].value - 5);
  if (arch == DetectorArch::Yolox) {
    // YOLOX's own preprocessing: BGR, 0..255, photo in the top-left corner.
    spec.norm.scale = 1;
    spec.norm.bgr = true;
    spec.align = LetterboxAlign::TopLeft;
  } else {
    spec.norm.scale = 1.0f / 255.0f;  // Ultralytics: RGB in 0..1, centred
    spec.align = LetterboxAlign::Center;
  }
  auto meta = s.model().metadata.find("names");
  if (meta != s.model().metadata.end()) spec.names = names_from_metadata(meta->second);
  if (int(spec.names.size()) != spec.classes && spec.classes == int(coco_names().size())) spec.names = coco_names();
  if (int(spec.names.size()) != spec.classes) {
    spec.names.clear();
    for (int c = 0; c < spec.classes; ++c) spec.names.push_back("class " + std::to_string(c));
  }
  return spec;
}

std::vector<Detection> decode_detections(const DetectorSpec& spec, const std::vector<Tensor>& outputs, float conf) {
  KESTREL_CHECK(!outputs.empty(), "the detector returned no outputs");
  const Tensor& t = outputs[0];
  const std::vector<float> v = t.to_f32();
  const int C = spec.classes;
  auto box = [](float cx, float cy, float w, float h) {
    return std::array<float, 4>{cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
  };
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
      dets.push_back({best, score, box(v[size_t(n)], v[size_t(N + n)], v[size_t(2 * N + n)], v[size_t(3 * N + n)]), {}});
    }
    return dets;
  }
  KESTREL_CHECK(t.rank() == 3 && t.dim(2) == 5 + C, detector_arch_name(spec.arch), " output of shape ",
                shape_str(t.shape()), " where [1, N, ", 5 + C, "] was declared");
  const int64_t N = t.dim(1), W = 5 + C;
  // YOLOX's rows are the grid cells of stride 8, then 16, then 32, row by row.
  std::vector<std::array<float, 3>> cells;  // gx, gy, stride
  if (spec.arch == DetectorArch::Yolox) {
    for (int s : {8, 16, 32})
      for (int gy = 0; gy < spec.height / s; ++gy)
        for (int gx = 0; gx < spec.width / s; ++gx) cells.push_back({float(gx), float(gy), float(s)});
    KESTREL_CHECK(int64_t(cells.size()) == N, "YOLOX output has ", N, " rows where its ", spec.width, "x", spec.height,
                  " input makes ", cells.size(), " grid cells");
  }
  for (int64_t n = 0; n < N; ++n) {
    const float* r = &v[size_t(n * W)];
    int best = 0;
    for (int c = 1; c < C; ++c)
      if (r[5 + c] > r[5 + best]) best = c;
    const float score = r[4] * r[5 + best];
    if (score < conf) continue;
    if (spec.arch == DetectorArch::Yolox) {
      const auto& g = cells[size_t(n)];
      dets.push_back({best, score,
                      box((r[0] + g[0]) * g[2], (r[1] + g[1]) * g[2], std::exp(r[2]) * g[2], std::exp(r[3]) * g[2]), {}});
    } else {
      dets.push_back({best, score, box(r[0], r[1], r[2], r[3]), {}});
    }
  }
  return dets;
}

}  // namespace kestrel::vision

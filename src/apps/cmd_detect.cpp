// kestrel detect: photos to boxes with an object detector (YOLOv8 / YOLO11,
// YOLOX, YOLOv5) or a face detector (SCRFD and YuNet: boxes and five
// keypoints; UltraFace: boxes; BlazeFace: boxes and six keypoints), as JSON and
// annotated PNGs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "apps/cli.h"
#include "apps/json_report.h"
#include "apps/photo_loop.h"
#include "core/error.h"
#include "core/npy.h"
#include "vision/detect.h"
#include "vision/draw.h"

namespace kestrel::cli {
namespace fs = std::filesystem;

// Photos a run where the model batches, unless --batch says otherwise.
constexpr int kDefaultBatch = 8;

int cmd_detect(int argc, char** argv) {
  using namespace vision;
  Args a = parse_args(argc, argv, with_session_flags({"--out", "--conf", "--iou", "--arch", "--save-inputs", "--size", "--batch"}),
                      with_session_switches({"--json"}));
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, a.positional.size() >= 2, "detect expects MODEL IMAGE|DIR...");
  const float conf = float(a.get_double("--conf", 0.25)), iou = float(a.get_double("--iou", 0.45));
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, conf >= 0 && conf <= 1, "--conf must lie in [0, 1], got ", conf);
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, iou >= 0 && iou <= 1, "--iou must lie in [0, 1], got ", iou);
  const DetectorArch arch = parse_detector_arch(a.get("--arch", "auto"));
  int width = 0, height = 0;
  if (std::string size = a.get("--size", ""); !size.empty()) {
    char x = 0, rest = 0;
    KESTREL_CHECK_AS(ErrorKind::InvalidArgument,
                     std::sscanf(size.c_str(), "%d%c%d%c", &width, &x, &height, &rest) == 3 && x == 'x' && width > 0 &&
                         height > 0,
                     "--size takes WIDTHxHEIGHT (e.g. 640x640), got '", size, "'");
  }
  const std::vector<std::string> photos = photo_paths({a.positional.begin() + 1, a.positional.end()});
  const std::string out_dir = a.get("--out", ""), inputs_dir = a.get("--save-inputs", "");
  if (!out_dir.empty()) fs::create_directories(out_dir);
  if (!inputs_dir.empty()) fs::create_directories(inputs_dir);
  const bool json = a.has("--json");
  const int batch_flag = a.get_int("--batch", 0);  // 0: as the model allows
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, !a.flags.count("--batch") || batch_flag >= 1,
                   "--batch must be 1 or more, got ", batch_flag);

  auto t0 = std::chrono::steady_clock::now();
  Detector det(a.positional[0], session_options(a), arch, width, height);
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const DetectorSpec& spec = det.spec();
  if (!json)
    std::printf("%s: %s detector, %dx%d input, %d classes (backend %s); loaded in %.1f ms\n", a.positional[0].c_str(),
                detector_arch_name(spec.arch), spec.width, spec.height, spec.classes,
                det.session().backend_name().c_str(), load_ms);
  struct Item {
    Image photo;
    PreparedPhoto prepared;
  };
  // Photos go through the model several at a time where its batch
  // dimension is open (SCRFD, YuNet's dynamic export); one at a time else.
  const TensorInfo& input = det.session().inputs()[0];
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, batch_flag <= 1 || det.batches(), "--batch ", batch_flag,
                   ": this model takes one photo a run (input '", input.name, "' is ", input.shape_str(),
                   ", or an output has a fixed first dim)");
  const int batch = batch_flag ? batch_flag : det.batches() ? kDefaultBatch : 1;
  auto report = [&](size_t i, const std::string& path, Image& photo, const DetectResult& r) {
    if (!inputs_dir.empty()) write_npy(inputs_dir + "/" + std::to_string(i) + ".npy", r.input);
    const std::string png = annotated_path(out_dir, path);
    if (!png.empty()) {
      draw_detections(photo, r.detections, spec.names);
      write_png(png, photo);
    }
    if (json) {
      Json j = api_json::detect_json(path, r, spec.names);
      if (!png.empty()) j["annotated"] = png;
      std::printf("%s\n", json_line(j).c_str());
      return;
    }
    // The run includes the head's decode and NMS (a node of the graph).
    std::printf("%s: %dx%d, %zu detections (preprocess %.1f ms, model with decode and NMS %.1f ms, boxes mapped "
                "back %.2f ms)%s%s\n",
                path.c_str(), r.width, r.height, r.detections.size(), r.pre_ms, r.run_ms, r.post_ms,
                png.empty() ? "" : ", wrote ", png.c_str());
    if (i == 0 && det.session().placement()) std::printf("%s\n", det.session().placement_summary().c_str());
    for (const Detection& d : r.detections)
      std::printf("  %-14s %.3f  [%.1f, %.1f, %.1f, %.1f]\n", spec.names[size_t(d.class_id)].c_str(), d.score,
                  d.box[0], d.box[1], d.box[2], d.box[3]);
  };
  for_each_photo<Item>(
      photos, "detect", size_t(batch),
      [&](const std::string& path) {
        Item item{load_image(path), {}};
        item.prepared = det.prepare(item.photo);
        return item;
      },
      [&](size_t first, std::vector<Item>& items) {
        std::vector<PreparedPhoto> prepared;
        for (const Item& it : items) prepared.push_back(it.prepared);
        const std::vector<DetectResult> results = det.detect(prepared, conf, iou);
        for (size_t k = 0; k < items.size(); ++k) report(first + k, photos[first + k], items[k].photo, results[k]);
      });
  return 0;
}

}  // namespace kestrel::cli

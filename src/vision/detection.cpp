#include "vision/detection.h"

#include <algorithm>
#include <map>
#include <regex>

namespace kestrel::vision {

float iou(const std::array<float, 4>& a, const std::array<float, 4>& b) {
  const float iw = std::min(a[2], b[2]) - std::max(a[0], b[0]);
  const float ih = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  if (iw <= 0 || ih <= 0) return 0;
  const float inter = iw * ih;
  const float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  const float uni = area_a + area_b - inter;
  return uni > 0 ? inter / uni : 0;
}

std::vector<Detection> nms_per_class(std::vector<Detection> dets, float iou_threshold, size_t max_out) {
  std::stable_sort(dets.begin(), dets.end(), [](const Detection& a, const Detection& b) { return a.score > b.score; });
  std::vector<Detection> kept;
  for (Detection& d : dets) {
    if (kept.size() >= max_out) break;
    bool suppressed = false;
    for (const Detection& k : kept)
      if (k.class_id == d.class_id && iou(k.box, d.box) > iou_threshold) {
        suppressed = true;
        break;
      }
    if (!suppressed) kept.push_back(std::move(d));
  }
  return kept;
}

const std::vector<std::string>& coco_names() {
  static const std::vector<std::string> names = {
      "person",        "bicycle",      "car",           "motorcycle",    "airplane",     "bus",
      "train",         "truck",        "boat",          "traffic light", "fire hydrant", "stop sign",
      "parking meter", "bench",        "bird",          "cat",           "dog",          "horse",
      "sheep",         "cow",          "elephant",      "bear",          "zebra",        "giraffe",
      "backpack",      "umbrella",     "handbag",       "tie",           "suitcase",     "frisbee",
      "skis",          "snowboard",    "sports ball",   "kite",          "baseball bat", "baseball glove",
      "skateboard",    "surfboard",    "tennis racket", "bottle",        "wine glass",   "cup",
      "fork",          "knife",        "spoon",         "bowl",          "banana",       "apple",
      "sandwich",      "orange",       "broccoli",      "carrot",        "hot dog",      "pizza",
      "donut",         "cake",         "chair",         "couch",         "potted plant", "bed",
      "dining table",  "toilet",       "tv",            "laptop",        "mouse",        "remote",
      "keyboard",      "cell phone",   "microwave",     "oven",          "toaster",      "sink",
      "refrigerator",  "book",         "clock",         "vase",          "scissors",     "teddy bear",
      "hair drier",    "toothbrush"};
  return names;
}

std::vector<std::string> names_from_metadata(const std::string& value) {
  static const std::regex entry(R"re((\d+)\s*:\s*(?:'([^']*)'|"([^"]*)"))re");
  std::map<size_t, std::string> found;
  for (auto it = std::sregex_iterator(value.begin(), value.end(), entry); it != std::sregex_iterator(); ++it)
    found[size_t(std::stoul((*it)[1]))] = (*it)[2].matched ? (*it)[2].str() : (*it)[3].str();
  std::vector<std::string> names;
  for (size_t i = 0; i < found.size(); ++i) {
    auto f = found.find(i);
    if (f == found.end()) return {};  // not 0..n-1: not a names table
    names.push_back(f->second);
  }
  return names;
}

}  // namespace kestrel::vision

#include "vision/detection.h"

#include <algorithm>
#include <map>
#include <regex>

namespace kestrel::vision {

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

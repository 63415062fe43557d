// The results of the vision pipelines as JSON, the one form they leave
// Kestrel in (the C API's strings, the CLI's --json lines, Python's dicts):
// one object per photo.
//   detect: {"image", "width", "height", "detections": [{"label", "class_id",
//            "score", "box": [x1, y1, x2, y2], "keypoints": [[x, y], ...]}]}
//   ocr:    {"image", "width", "height", "lines": [{"text", "score",
//            "box": [[x, y] x 4], "turned"}]}
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vision/detect.h"
#include "vision/ocr.h"

namespace kestrel::api_json {

using Json = nlohmann::ordered_json;  // keys in the order written

Json detect_json(const std::string& image, const vision::DetectResult& r, const std::vector<std::string>& names);
Json ocr_json(const std::string& image, const vision::OcrResult& r);

// One line of JSON. Bytes that are not UTF-8 (a path, a dictionary entry)
// become U+FFFD rather than an exception.
std::string json_line(const Json& j);

}  // namespace kestrel::api_json

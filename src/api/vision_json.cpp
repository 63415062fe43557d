#include "api/vision_json.h"

namespace kestrel::api_json {
namespace {

Json photo(const std::string& image, int width, int height) {
  Json j;
  j["image"] = image;
  j["width"] = width;
  j["height"] = height;
  return j;
}

}  // namespace

Json detect_json(const std::string& image, const vision::DetectResult& r, const std::vector<std::string>& names) {
  Json j = photo(image, r.width, r.height);
  j["detections"] = Json::array();
  for (const vision::Detection& d : r.detections) {
    Json o;
    o["label"] = names[size_t(d.class_id)];
    o["class_id"] = d.class_id;
    o["score"] = d.score;
    o["box"] = {d.box[0], d.box[1], d.box[2], d.box[3]};
    if (!d.keypoints.empty()) {
      Json k = Json::array();
      for (const auto& p : d.keypoints) k.push_back({p[0], p[1]});
      o["keypoints"] = k;
    }
    j["detections"].push_back(o);
  }
  return j;
}

Json ocr_json(const std::string& image, const vision::OcrResult& r) {
  Json j = photo(image, r.width, r.height);
  j["lines"] = Json::array();
  for (const vision::OcrLine& l : r.lines) {
    Json o;
    o["text"] = l.text;
    o["score"] = l.score;
    Json box = Json::array();
    for (const vision::Point& p : l.box) box.push_back({p.x, p.y});
    o["box"] = box;
    if (l.turned) o["turned"] = true;  // the direction classifier read it upside down
    j["lines"].push_back(o);
  }
  return j;
}

std::string json_line(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace kestrel::api_json

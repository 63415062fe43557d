// The vision pipelines through the C API (kestrel_detector, kestrel_text_reader)
// and the C++ classes over it (kestrel.hpp): the same JSON from a file and
// from its pixels, the CLI's answer on real models and photos, and every
// misuse answered with NULL and a message that names it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "api/kestrel.hpp"
#include "real_models.h"
#include "vision/image.h"

namespace kestrel {
namespace {
using ::testing::HasSubstr;
using Json = nlohmann::json;

std::string model(const std::string& name) {
  const std::string path = real_models::models_dir() + "/" + name;
  EXPECT_TRUE(std::filesystem::is_regular_file(path)) << path << " is missing: run scripts/fetch_models.sh";
  return path;
}
std::string photo(const std::string& name) { return model("photos/" + name); }

// The photo's 8-bit RGB pixels, as an application would hand them over.
std::vector<uint8_t> rgb8(const std::string& path, int* w, int* h) {
  const vision::Image img = vision::load_image(path);
  *w = img.width;
  *h = img.height;
  std::vector<uint8_t> out(img.pixels.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t(img.pixels[i]);
  return out;
}

TEST(CApiVision, DetectorGivesTheSameBoxesFromAFileAndFromItsPixels) {
  api::Detector d(model("ultraface_320.onnx"), "auto", 0, 0, api::Options().backend("cpu").threads(2));
  const Json from_file = Json::parse(d.detect(photo("astronaut.png")));
  EXPECT_EQ(from_file["image"], photo("astronaut.png"));
  EXPECT_EQ(from_file["width"], 512);
  ASSERT_GE(from_file["detections"].size(), 1u);
  EXPECT_EQ(from_file["detections"][0]["label"], "face");
  EXPECT_GT(from_file["detections"][0]["score"].get<double>(), 0.9);
  int w = 0, h = 0;
  const std::vector<uint8_t> px = rgb8(photo("astronaut.png"), &w, &h);
  const Json from_pixels = Json::parse(d.detect(px.data(), w, h, 0, 0.25f, 0.45f, "astronaut"));
  EXPECT_EQ(from_pixels["image"], "astronaut");
  EXPECT_EQ(from_pixels["detections"], from_file["detections"]);
}

TEST(CApiVision, RowsFartherApartThanTheWidthAreRead) {
  api::Detector d(model("ultraface_320.onnx"), "ultraface", 0, 0, api::Options().backend("cpu").threads(2));
  int w = 0, h = 0;
  const std::vector<uint8_t> px = rgb8(photo("astronaut.png"), &w, &h);
  const int64_t stride = int64_t(w) * 3 + 64;  // each row padded by 64 bytes
  std::vector<uint8_t> padded(size_t(stride) * size_t(h), 7);
  for (int y = 0; y < h; ++y) std::copy_n(px.data() + size_t(y) * size_t(w) * 3, size_t(w) * 3, padded.data() + y * stride);
  EXPECT_EQ(Json::parse(d.detect(padded.data(), w, h, stride))["detections"],
            Json::parse(d.detect(px.data(), w, h))["detections"]);
}

TEST(CApiVision, TextReaderReadsThePage) {
  api::TextReader r(model("ppocrv4_det.onnx"), model("ppocrv4_rec.onnx"), "", "",
                    api::Options().backend("cpu").threads(2));
  const Json page = Json::parse(r.read(photo("imageTextN.png")));
  ASSERT_EQ(page["lines"].size(), 13u);
  EXPECT_EQ(page["lines"][0]["text"], "technical details are too complex to cover in the book itself.");
  EXPECT_EQ(page["lines"][0]["box"].size(), 4u);
}

TEST(CApiVision, MisuseIsAnsweredWithNullAndNamed) {
  EXPECT_EQ(kestrel_detector_create(nullptr, nullptr, 0, 0, nullptr), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("model_path is NULL"));
  EXPECT_EQ(kestrel_detector_create(model("ultraface_320.onnx").c_str(), "yolo9000", 0, 0, nullptr), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("unknown detector architecture 'yolo9000'"));
  EXPECT_EQ(kestrel_last_error_code(), KESTREL_INVALID_ARGUMENT);
  EXPECT_EQ(kestrel_detector_create(model("silero_vad.onnx").c_str(), nullptr, 0, 0, nullptr), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("a detector takes one image input"));

  kestrel_detector* d = kestrel_detector_create(model("ultraface_320.onnx").c_str(), nullptr, 0, 0, nullptr);
  ASSERT_NE(d, nullptr) << kestrel_last_error();
  const uint8_t px[12] = {};
  EXPECT_EQ(kestrel_detector_detect_rgb8(d, px, 2, 2, 5, nullptr, 0.25f, 0.45f), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("stride 5 is less than width x 3 = 6"));
  EXPECT_EQ(kestrel_detector_detect_rgb8(d, px, 0, 2, 0, nullptr, 0.25f, 0.45f), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("the photo is 0x2"));
  EXPECT_EQ(kestrel_detector_detect_rgb8(d, nullptr, 2, 2, 0, nullptr, 0.25f, 0.45f), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("pixels is NULL"));
  EXPECT_EQ(kestrel_detector_detect_file(d, "/no/such/photo.jpg", 0.25f, 0.45f), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("/no/such/photo.jpg"));
  EXPECT_EQ(kestrel_detector_detect_rgb8(d, px, 2, 2, 0, nullptr, 1.5f, 0.45f), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("must lie in [0, 1]"));
  EXPECT_EQ(kestrel_detector_detect_file(nullptr, "x.jpg", 0.25f, 0.45f), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("detector is NULL"));
  kestrel_detector_free(d);

  EXPECT_EQ(kestrel_text_reader_create(model("ppocrv4_det.onnx").c_str(), nullptr, nullptr, nullptr, nullptr), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("recognizer_path must not be NULL"));
  kestrel_text_reader* r = kestrel_text_reader_create(model("ppocrv4_det.onnx").c_str(),
                                                      model("ppocrv4_rec.onnx").c_str(), nullptr, nullptr, nullptr);
  ASSERT_NE(r, nullptr) << kestrel_last_error();
  EXPECT_EQ(kestrel_text_reader_read_file(r, photo("imageTextN.png").c_str(), -0.1f), nullptr);
  EXPECT_THAT(kestrel_last_error(), HasSubstr("min_score must lie in [0, 1], got -0.1"));
  kestrel_text_reader_free(r);
  kestrel_string_free(nullptr);  // as free(NULL)
}

}  // namespace
}  // namespace kestrel

// Image preprocessing and the output comparison used by the real-model tests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>

#include "real_models.h"
#include "core/compare.h"
#include "vision/draw.h"
#include "vision/detection.h"
#include "vision/image.h"
#include "vision/letterbox.h"

namespace kestrel {
namespace {
using namespace vision;

Image ramp(int w, int h, int c) {
  Image img(w, h, c);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) img.at(y, x, k) = float(10 * x + 100 * y + k);
  return img;
}

TEST(Vision, ResizeToSameSizeIsExact) {
  Image a = ramp(5, 4, 3);
  EXPECT_EQ(resize_bilinear(a, 5, 4).pixels, a.pixels);
}

TEST(Vision, ResizeUsesHalfPixelCenters) {
  // 2x upscale of a row [0, 10]: centers map to -0.25, 0.25, 0.75, 1.25 ->
  // clamped 0, 0.25, 0.75, 1 (OpenCV INTER_LINEAR gives 0, 2.5, 7.5, 10).
  Image a = ramp(2, 1, 1);
  Image b = resize_bilinear(a, 4, 1);
  EXPECT_FLOAT_EQ(b.at(0, 0, 0), 0.0f);
  EXPECT_FLOAT_EQ(b.at(0, 1, 0), 2.5f);
  EXPECT_FLOAT_EQ(b.at(0, 2, 0), 7.5f);
  EXPECT_FLOAT_EQ(b.at(0, 3, 0), 10.0f);
}

TEST(Vision, ToTensorLayoutsNormalizeAndBgr) {
  Image a = ramp(3, 2, 3);
  Normalize n;
  n.scale = 1;
  n.mean = {1, 2, 3, 0};
  n.std = {2, 2, 2, 1};
  Tensor nchw = to_tensor(a, Layout::NCHW, n), nhwc = to_tensor(a, Layout::NHWC, n);
  EXPECT_EQ(nchw.shape(), (Shape{1, 3, 2, 3}));
  EXPECT_EQ(nhwc.shape(), (Shape{1, 2, 3, 3}));
  // Pixel (y=1, x=2), channel 1: value 121 -> (121 - 2) / 2.
  EXPECT_FLOAT_EQ(nchw.data<float>()[(1 * 2 + 1) * 3 + 2], 59.5f);
  EXPECT_FLOAT_EQ(nhwc.data<float>()[(1 * 3 + 2) * 3 + 1], 59.5f);
  n.bgr = true;  // tensor channel 0 now reads image channel 2 (122)
  EXPECT_FLOAT_EQ(to_tensor(a, Layout::NCHW, n).data<float>()[(0 * 2 + 1) * 3 + 2], (122.0f - 1) / 2);
}

TEST(Vision, PngRoundTrip) {
  Image a = ramp(4, 3, 4);
  for (float& v : a.pixels) v = std::fmod(v, 256.0f);
  std::string path = ::testing::TempDir() + "/kestrel_vision_test_" + std::to_string(getpid()) + ".png";
  write_png(path, a);
  Image b = load_image(path, 4);
  EXPECT_EQ(b.pixels, a.pixels);
}

// A detection's box in its class colour and, above it, a tag of that colour
// holding the label in strokes that stand out (white on the palette's red);
// a box at the photo's top edge takes its tag inside.
TEST(Vision, DetectionsAreDrawnWithTheirLabels) {
  auto count = [](const Image& img, int y0, int y1, int x0, int x1, std::array<float, 3> rgb) {
    int n = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) n += img.at(y, x, 0) == rgb[0] && img.at(y, x, 1) == rgb[1] && img.at(y, x, 2) == rgb[2];
    return n;
  };
  const std::array<float, 3> red = {255, 56, 56}, white = {255, 255, 255};  // class 0's colour; ink on it
  Image img(300, 150, 3);
  Detection d;
  d.class_id = 0, d.score = 0.93f, d.box = {20, 60, 220, 140};
  draw_detections(img, {d}, {"dog"});
  // Lines are 2 pixels (150 / 300 rounds up to 2), so the tag is 2x stb's 11 units: rows 38-59.
  EXPECT_EQ(count(img, 60, 62, 20, 220, red), 2 * 200);  // the box's top edge
  const int tag_red = count(img, 38, 60, 20, 120, red), tag_ink = count(img, 38, 60, 20, 120, white);
  EXPECT_GT(tag_red, 500) << "no tag above the box";
  EXPECT_GT(tag_ink, 60) << "no label on the tag";
  EXPECT_EQ(count(img, 0, 38, 0, 300, red) + count(img, 0, 38, 0, 300, white), 0) << "drawn outside the tag";
  Image top(300, 150, 3);
  d.box = {20, 3, 220, 140};
  draw_detections(top, {d}, {"dog"});
  EXPECT_GT(count(top, 3, 25, 20, 120, white), 60) << "no label inside a box at the top edge";
}

TEST(Vision, NmsDropsOverlapsWithinAClassOnly) {
  std::vector<Detection> d = {{0, 0.6f, {0, 0, 10, 10}, {}},    // overlaps the 0.9 box of its class: dropped
                              {0, 0.9f, {1, 1, 11, 11}, {}},    //
                              {1, 0.8f, {0, 0, 10, 10}, {}},    // same place, another class: kept
                              {0, 0.7f, {20, 20, 30, 30}, {}}};  // its class, elsewhere: kept
  std::vector<Detection> k = nms_per_class(d, 0.5f);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0].score, 0.9f);
  EXPECT_EQ(k[1].class_id, 1);
  EXPECT_EQ(k[2].score, 0.7f);
  EXPECT_NEAR(iou({0, 0, 10, 10}, {5, 0, 15, 10}), 50.f / 150.f, 1e-6);
  EXPECT_EQ(iou({0, 0, 1, 1}, {2, 2, 3, 3}), 0.f);
}

TEST(Vision, ClassNamesFromUltralyticsMetadata) {
  EXPECT_EQ(names_from_metadata("{0: 'person', 1: 'bicycle', 2: \"traffic light\"}"),
            (std::vector<std::string>{"person", "bicycle", "traffic light"}));
  EXPECT_TRUE(names_from_metadata("{1: 'a'}").empty());  // not numbered from 0
  EXPECT_TRUE(names_from_metadata("yolov8n").empty());
  EXPECT_EQ(coco_names().size(), 80u);
  EXPECT_EQ(coco_names()[16], "dog");
}

TEST(Vision, LetterboxPlacesThePhotoAsEachDetectorDoes) {
  Image photo = ramp(768, 576, 3);
  Letterbox m;
  // YOLOX: the scaled size floored (768 x 576 -> 416 x 312), top-left.
  Image a = letterbox(photo, 416, 416, LetterboxAlign::TopLeft, 114, &m);
  EXPECT_EQ(m.pad_x, 0);
  EXPECT_NE(a.at(311, 415, 0), 114);
  EXPECT_EQ(a.at(312, 0, 0), 114);
  EXPECT_NEAR(m.photo_x(416), 768, 1e-3);
  // Ultralytics: rounded and centred; 640 x 480 of photo, 80 grey rows above and below.
  Image b = letterbox(photo, 640, 640, LetterboxAlign::Center, 114, &m);
  EXPECT_EQ(m.pad_y, 80);
  EXPECT_EQ(b.at(79, 320, 0), 114);
  EXPECT_NE(b.at(80, 320, 0), 114);
  EXPECT_NEAR(m.photo_x(640), 768, 1e-3);
  EXPECT_NEAR(m.photo_y(80), 0, 1e-3);
}

TEST(Compare, AgreementMeasures) {
  Tensor ref = Tensor::from_f32({4}, {1, -2, 4, 0});
  Tensor ours = Tensor::from_f32({4}, {1, -2, 3.5f, 0});
  Agreement g = agreement(ours, ref);
  EXPECT_DOUBLE_EQ(g.max_abs, 0.5);
  EXPECT_NEAR(g.max_rel, 0.125, 1e-12);  // relative to max|ref| = 4
  EXPECT_NEAR(g.cosine, (1 + 4 + 14.0) / (std::sqrt(21.0) * std::sqrt(17.25)), 1e-12);
  EXPECT_DOUBLE_EQ(agreement(ref, ref).cosine, 1.0);
  Tensor nan = Tensor::from_f32({4}, {1, -2, NAN, 0});
  EXPECT_TRUE(std::isinf(agreement(nan, ref).max_abs));
  EXPECT_DOUBLE_EQ(agreement(nan, nan).max_abs, 0.0);
  EXPECT_THROW(agreement(ref, Tensor::from_f32({2}, {1, 2})), Error);
}

TEST(RealModels, VoicedWaveformIsDeterministicAndBounded) {
  auto a = real_models::voiced_waveform(16000, 16000), b = real_models::voiced_waveform(16000, 16000);
  EXPECT_EQ(a, b);
  float peak = 0;
  for (float v : a) peak = std::max(peak, std::abs(v));
  EXPECT_NEAR(peak, 0.5f, 1e-6);
}

}  // namespace
}  // namespace kestrel

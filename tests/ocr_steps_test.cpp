// The steps of kestrel ocr on inputs whose answer is known by construction:
// the rectangle of least area, corner order, the DB boxes from a drawn
// probability map, the crop's quarter turn, CTC decoding and the dictionary
// check. (tests/python/test_ocr.py reads real text with the real models.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "core/error.h"
#include "vision/quad.h"
#include "vision/text_detect.h"
#include "vision/text_recognize.h"

namespace kestrel {
namespace {
using namespace vision;
using ::testing::HasSubstr;

// The integer points inside a w x h rectangle centred at (cx, cy) turned by `angle`.
std::vector<Point> rotated_rect_points(float cx, float cy, float w, float h, float angle) {
  std::vector<Point> pts;
  const float c = std::cos(angle), s = std::sin(angle);
  for (int y = 0; y < 200; ++y)
    for (int x = 0; x < 200; ++x) {
      const float dx = float(x) - cx, dy = float(y) - cy;
      const float u = dx * c + dy * s, v = -dx * s + dy * c;
      if (std::abs(u) <= w / 2 && std::abs(v) <= h / 2) pts.push_back({float(x), float(y)});
    }
  return pts;
}

TEST(OcrSteps, ConvexHullDropsInteriorAndCollinearPoints) {
  std::vector<Point> pts = {{0, 0}, {2, 0}, {4, 0}, {4, 4}, {0, 4}, {2, 2}, {1, 3}, {0, 2}};
  EXPECT_EQ(convex_hull(pts).size(), 4u);
}

TEST(OcrSteps, MinAreaRectFindsATurnedRectangle) {
  const float angle = 0.3f;
  const RotatedRect r = min_area_rect(rotated_rect_points(100, 90, 120, 30, angle));
  // Pixel centres: the extent is the rectangle's less up to a pixel.
  const float long_side = std::max(r.width, r.height), short_side = std::min(r.width, r.height);
  EXPECT_NEAR(long_side, 120, 2);
  EXPECT_NEAR(short_side, 30, 2);
  EXPECT_NEAR(r.center.x, 100, 1);
  EXPECT_NEAR(r.center.y, 90, 1);
  // The long side's direction, modulo half a turn.
  const float dir = r.width >= r.height ? r.angle : r.angle + float(M_PI / 2);
  EXPECT_NEAR(std::sin(2 * dir), std::sin(2 * angle), 0.03);
}

TEST(OcrSteps, CornersComeTopLeftFirstClockwise) {
  const Quad q = ordered_corners({{50, 20}, 60, 10, 0.1f});
  EXPECT_LT(q[0].x, q[1].x);  // top edge left to right
  EXPECT_LT(q[1].y, q[2].y);  // right edge downward
  EXPECT_GT(q[2].x, q[3].x);  // bottom edge right to left
  EXPECT_LT(q[0].y, q[3].y);  // left edge: top first
  EXPECT_TRUE(inside(q, {50, 20}));
  EXPECT_FALSE(inside(q, {50, 40}));
}

TEST(OcrSteps, DetectorSizeIsCappedAndRoundedToMultiplesOf32) {
  TextDetectOptions opt;
  int w = 0, h = 0;
  text_detect_size(556, 257, opt, &w, &h);
  EXPECT_EQ(w, 544);  // 556 / 32 = 17.4 -> 17
  EXPECT_EQ(h, 256);
  text_detect_size(4000, 1000, opt, &w, &h);  // longest side 960: 960 x 240
  EXPECT_EQ(w, 960);
  EXPECT_EQ(h, 256);  // 240 / 32 = 7.5, rounded to even: 8
  text_detect_size(10, 10, opt, &w, &h);
  EXPECT_EQ(w, 32);
  EXPECT_EQ(h, 32);
  EXPECT_THROW(text_detect_size(0, 10, opt, &w, &h), Error);
}

TEST(OcrSteps, DbBoxesAreGrownAndMappedToThePhoto) {
  // A 64 x 128 map holding one bar of probability 0.9, 40 x 10 pixels, and
  // a speck too small to keep; the photo is twice the map's size.
  Tensor prob(DType::Float32, {1, 1, 64, 128});
  float* p = prob.data<float>();
  for (int y = 20; y < 30; ++y)
    for (int x = 30; x < 70; ++x) p[y * 128 + x] = 0.9f;
  p[50 * 128 + 100] = 0.9f;
  const std::vector<TextBox> boxes = text_boxes(prob, 256, 128, TextDetectOptions{});
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_NEAR(boxes[0].score, 0.9f, 1e-5);
  // Pixel centres 30..69 x 20..29: 39 x 9, grown by 39 * 9 * 1.5 / 96 = 5.48 on each side.
  const Quad& q = boxes[0].quad;
  EXPECT_NEAR(q[0].x, (30 - 5.48) * 2, 1.01);
  EXPECT_NEAR(q[0].y, (20 - 5.48) * 2, 1.01);
  EXPECT_NEAR(q[2].x, (69 + 5.48) * 2, 1.01);
  EXPECT_NEAR(q[2].y, (29 + 5.48) * 2, 1.01);
}

TEST(OcrSteps, DbBoxesComeInReadingOrder) {
  Tensor prob(DType::Float32, {1, 1, 64, 128});
  float* p = prob.data<float>();
  auto bar = [&](int x0, int y0) {
    for (int y = y0; y < y0 + 8; ++y)
      for (int x = x0; x < x0 + 20; ++x) p[y * 128 + x] = 0.8f;
  };
  bar(70, 10);  // right, a little higher than the left one: same line
  bar(10, 13);
  bar(10, 40);  // the next line
  const std::vector<TextBox> boxes = text_boxes(prob, 128, 64, TextDetectOptions{});
  ASSERT_EQ(boxes.size(), 3u);
  EXPECT_LT(boxes[0].quad[0].x, 40);
  EXPECT_GT(boxes[1].quad[0].x, 40);
  EXPECT_GT(boxes[2].quad[0].y, 30);
}

TEST(OcrSteps, TallCropsTurnAQuarterAnticlockwise) {
  Image photo(10, 30, 1);
  for (int y = 0; y < 30; ++y)
    for (int x = 0; x < 10; ++x) photo.at(y, x, 0) = float(100 * y + x);
  const Quad whole = {Point{0, 0}, Point{10, 0}, Point{10, 30}, Point{0, 30}};
  const Image crop = crop_quad(photo, whole);
  ASSERT_EQ(crop.width, 30);
  ASSERT_EQ(crop.height, 10);
  // The right column, top to bottom, becomes the top row, left to right.
  EXPECT_FLOAT_EQ(crop.at(0, 0, 0), photo.at(0, 9, 0));
  EXPECT_FLOAT_EQ(crop.at(0, 29, 0), photo.at(29, 9, 0));
  EXPECT_FLOAT_EQ(crop.at(9, 0, 0), photo.at(0, 0, 0));
  const Image back = rotated_half_turn(crop);
  EXPECT_FLOAT_EQ(back.at(0, 0, 0), crop.at(9, 29, 0));
}

TEST(OcrSteps, TextLineIsPaddedWithZerosOnTheRight) {
  Image crop(20, 10, 3);
  for (float& v : crop.pixels) v = 255;
  const Tensor t = text_line_input(crop, 48, 1000, 320);
  ASSERT_EQ(t.shape(), (Shape{1, 3, 48, 320}));
  const float* d = t.data<float>();
  EXPECT_FLOAT_EQ(d[0], 1.0f);     // (255 / 255 - 0.5) / 0.5
  EXPECT_FLOAT_EQ(d[95], 1.0f);    // 48 * 2 = 96 columns of the line
  EXPECT_FLOAT_EQ(d[96], 0.0f);    // padding
  EXPECT_FLOAT_EQ(d[319], 0.0f);
}

class Dictionary : public ::testing::Test {
 protected:
  // One file per test and process: ctest runs this fixture's tests side by
  // side, and a shared name let one test's TearDown delete the other's file.
  std::string path = ::testing::TempDir() + "/kestrel_ocr_dict_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                     std::to_string(getpid()) + ".txt";
  void write(const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
  void TearDown() override { std::remove(path.c_str()); }
};

TEST_F(Dictionary, CtcMergesRepeatsAndDropsBlanks) {
  write("a\r\nb\n");  // a CRLF line too; the space class is added: 4 classes
  CharacterSet chars(path, 4);
  ASSERT_EQ(chars.size(), 4);
  EXPECT_EQ(chars.at(3), " ");
  // Steps: a a blank a b space b -> "aab b"; kept probabilities 0.9 0.7 0.6 0.5 0.8.
  const std::vector<int> best = {1, 1, 0, 1, 2, 3, 2};
  const std::vector<float> prob = {0.9f, 0.4f, 0.99f, 0.7f, 0.6f, 0.5f, 0.8f};
  std::vector<float> probs(best.size() * 4, 0.0f);
  for (size_t t = 0; t < best.size(); ++t) probs[t * 4 + size_t(best[t])] = prob[t];
  const TextLine line = ctc_decode(probs.data(), int(best.size()), 4, chars);
  EXPECT_EQ(line.text, "aab b");
  EXPECT_NEAR(line.score, (0.9f + 0.7f + 0.6f + 0.5f + 0.8f) / 5, 1e-6);
}

TEST_F(Dictionary, ThatDoesNotFitTheModelIsRefused) {
  write("a\nb\nc\n");
  try {
    CharacterSet chars(path, 6625);
    FAIL() << "a 3-entry dictionary was taken for 6625 classes";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("has 3 entries, but the recognizer has 6625 classes"));
  }
  EXPECT_THROW(CharacterSet(path + ".missing", 5), Error);
}

}  // namespace
}  // namespace kestrel

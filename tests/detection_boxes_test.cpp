// com.kestrel DetectionBoxes' checks of what it is given: each head's
// outputs whose shapes do not fit it are refused naming the output, its
// shape and what was expected; an unnamed head and a threshold outside
// [0, 1] likewise. (Its arithmetic is checked against the backends in
// tests/backend_ops/cases_detection.cpp, and end to end in
// tests/python/test_detect.py.)
#include <gtest/gtest.h>

#include "core/error.h"
#include "ops/detection_boxes.h"
#include "ops/registry.h"

namespace kestrel {
namespace {

std::string refusal(const ops::HeadGeometry& head, const std::vector<Shape>& shapes) {
  try {
    ops::head_layout(head, shapes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DetectionBoxes, HeadOutputsThatDoNotFitAreNamed) {
  using A = ops::DetectorArch;
  EXPECT_NE(refusal({A::Yolox, 64, 64, 2}, {{1, 80, 7}}).find("YOLOX output has 80 rows where its 64x64 input makes 84 grid cells"),
            std::string::npos);
  EXPECT_NE(refusal({A::YoloV8, 64, 64, 3}, {{1, 8, 100}}).find("YOLOv8 output of shape [1,8,100] where [B, 7, N]"),
            std::string::npos);
  EXPECT_NE(refusal({A::UltraFace, 320, 240, 1}, {{1, 100, 2}, {1, 99, 4}}).find("disagree on the number of priors"),
            std::string::npos);
  EXPECT_NE(refusal({A::Scrfd, 64, 64, 1}, {{128, 1}}).find("reads 9 outputs, got 1"), std::string::npos);
  std::vector<Shape> scrfd;
  for (int64_t w : {1, 4, 10})
    for (int64_t s : {8, 16, 32}) scrfd.push_back({(64 / s) * (64 / s) * 2, w});
  EXPECT_EQ(refusal({A::Scrfd, 64, 64, 1}, scrfd), "");
  scrfd[4] = {31, 4};  // bbox at stride 16: one row short
  EXPECT_NE(refusal({A::Scrfd, 64, 64, 1}, scrfd).find("head output 4 has shape [31,4] where 1 photos of 128 values"),
            std::string::npos);
  EXPECT_NE(refusal({A::BlazeFace, 16, 16, 1}, {{1, 30, 1}, {1, 24, 1}, {1, 30, 16}, {1, 24, 16}})
                .find("BlazeFace's grid 0 has scores [1,30,1], not 2 anchors on each cell of a square grid"),
            std::string::npos);
  EXPECT_NE(refusal({A::Auto, 64, 64, 1}, {{1, 84, 7}}).find("must be named"), std::string::npos);
}

TEST(DetectionBoxes, AttributesAndThresholdsAreChecked) {
  ir::Node n;
  n.name = "boxes";
  n.op_type = "DetectionBoxes";
  ir::Attribute head;
  head.kind = ir::Attribute::Kind::String;
  head.s = "yolo9000";
  n.attrs["head"] = head;
  try {
    ops::detection_boxes_attrs(n);
    ADD_FAILURE() << "an unknown head was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown detector architecture 'yolo9000'"), std::string::npos) << e.what();
  }
  head.s = "yolox";
  n.attrs["head"] = head;
  try {
    ops::detection_boxes_attrs(n);
    ADD_FAILURE() << "a head without its input size was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("width, height, classes and max_detections must be positive"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kestrel

// The object detectors Kestrel decodes, told apart by their outputs' shapes:
// what each expects of a photo (size, channel order, scaling, letterbox).
// How a head's outputs become boxes is the op that decodes them
// (ops/detection_boxes.h).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "onnx/loader.h"
#include "ops/detection_boxes.h"
#include "runtime/session.h"
#include "vision/detection.h"
#include "vision/image.h"
#include "vision/letterbox.h"

namespace kestrel::vision {

using ops::DetectorArch;
using ops::detector_arch_name;
using ops::parse_detector_arch;

struct DetectorSpec {
  DetectorArch arch = DetectorArch::Auto;
  std::string input;       // the image input's name
  int width = 0, height = 0;  // its pixels
  Normalize norm;          // from 0..255 pixels
  Layout layout = Layout::NCHW;  // BlazeFace's TensorFlow export takes NHWC
  LetterboxAlign align = LetterboxAlign::Center;
  float fill = 114;        // the letterbox's grey (0..255)
  int classes = 0;
  std::vector<std::string> names;  // one per class
  // The model's outputs in the head's order (SCRFD: score,
  // bbox, kps; YuNet: cls, obj, bbox, kps; each for strides 8, 16, 32;
  // UltraFace: scores, boxes; BlazeFace: the finer and the coarser grid's
  // scores, then their boxes).
  std::vector<size_t> outputs;
};

// What recognizing a detector reads of its model: the graph's inputs and
// outputs and the exporter's metadata.
struct ModelSignature {
  std::vector<TensorInfo> inputs, outputs;
  std::map<std::string, std::string> metadata;
};
ModelSignature signature_of(const onnx_io::Model& model);

// Reads the detector from the model's input and first output (and its
// "names" metadata). `arch` other than Auto is the head the caller
// expects: a model whose outputs are another head's fails, naming both. A
// model it cannot place fails with what it saw and what it looked for.
// `width` x `height` (0: the model's, else 640 x 640) sizes an input whose
// height and width are open (SCRFD, YuNet's dynamic export); a fixed input
// must be asked for at its own size.
DetectorSpec recognize_detector(const ModelSignature& model, DetectorArch arch, int width = 0, int height = 0);

}  // namespace kestrel::vision

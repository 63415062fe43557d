// A photo to lines of text with PP-OCR's three models: the DB detector finds
// text boxes, the optional direction classifier turns upside-down ones
// upright, the recognizer reads each with CTC over a character dictionary.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "vision/text_detect.h"
#include "vision/text_recognize.h"

namespace kestrel::vision {

struct OcrOptions {
  TextDetectOptions detect;
  float min_score = 0.5f;        // lines read with a lower mean probability are dropped (PP-OCR's drop_score)
  float upside_down_score = 0.9f;  // the classifier's confidence needed to turn a crop
};

struct OcrLine {
  std::string text;
  float score = 0;
  Quad box;  // photo pixels, top-left first, clockwise
  bool turned = false;  // the classifier found it upside down
};

struct OcrResult {
  int width = 0, height = 0;
  std::vector<OcrLine> lines;  // reading order
  double detect_ms = 0, classify_ms = 0, recognize_ms = 0;
};

// PP-OCR's dictionary where fetch_models puts it: ppocr_keys_v1.txt beside
// the recognizer. Fails, saying to name one, when it is not there.
std::string default_dictionary(const std::string& recognizer_path);

class TextReader {
 public:
  // `classifier` may be null. The dictionary's entries must match the
  // recognizer's classes (CharacterSet).
  TextReader(std::shared_ptr<Session> detector, std::shared_ptr<Session> recognizer,
             std::shared_ptr<Session> classifier, const std::string& dictionary_path);
  OcrResult read(const Image& photo, const OcrOptions& opt) const;

 private:
  std::shared_ptr<Session> det_, rec_, cls_;
  std::string det_input_, rec_input_, cls_input_;
  std::unique_ptr<CharacterSet> chars_;
};

}  // namespace kestrel::vision

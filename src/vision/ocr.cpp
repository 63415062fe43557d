#include "vision/ocr.h"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/error.h"

namespace kestrel::vision {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The one image input of an OCR model: [N, 3, H, W] float.
std::string image_input(const Session& s, const char* role) {
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, s.inputs().size() == 1 && s.outputs().size() == 1, "the ", role,
                   " model should have one input and one output, it has ", s.inputs().size(), " and ",
                   s.outputs().size());
  const TensorInfo& in = s.inputs()[0];
  const bool ok = in.shape && in.shape->size() == 4 && (!(*in.shape)[1].known() || (*in.shape)[1].value == 3);
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, ok, "the ", role, " model's input '", in.name,
                   "' should be an image batch [N, 3, H, W], it is ", in.shape_str());
  return in.name;
}

// A fixed dim of the model's first input or output, else `otherwise`.
int64_t fixed_dim(const TensorInfo& t, size_t i, int64_t otherwise) {
  return t.shape && t.shape->size() > i && (*t.shape)[i].known() ? (*t.shape)[i].value : otherwise;
}

}  // namespace

std::string default_dictionary(const std::string& recognizer_path) {
  namespace fs = std::filesystem;
  const fs::path beside = fs::path(recognizer_path).parent_path() / "ppocr_keys_v1.txt";
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, fs::exists(beside),
                   "text recognition needs the recognizer's character dictionary: name one (--dict FILE, one "
                   "character per line; PP-OCR's ppocr_keys_v1.txt, looked for beside the model at '",
                   beside.string(), "', is not there)");
  return beside.string();
}

TextReader::TextReader(std::shared_ptr<Session> detector, std::shared_ptr<Session> recognizer,
                       std::shared_ptr<Session> classifier, const std::string& dictionary_path)
    : det_(std::move(detector)), rec_(std::move(recognizer)), cls_(std::move(classifier)) {
  det_input_ = image_input(*det_, "text detection");
  rec_input_ = image_input(*rec_, "text recognition");
  if (cls_) cls_input_ = image_input(*cls_, "text direction");
  const TensorInfo& out = rec_->outputs()[0];
  const int64_t classes = fixed_dim(out, 2, 0);
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, out.shape && out.shape->size() == 3 && classes > 1,
                   "the text recognition model's output '", out.name,
                   "' should be [N, steps, classes] with the classes fixed, it is ", out.shape_str());
  chars_ = std::make_unique<CharacterSet>(dictionary_path, int(classes));
}

OcrResult TextReader::read(const Image& photo, const OcrOptions& opt) const {
  OcrResult r;
  r.width = photo.width;
  r.height = photo.height;
  auto t0 = std::chrono::steady_clock::now();
  int dw = 0, dh = 0;
  text_detect_size(photo.width, photo.height, opt.detect, &dw, &dh);
  const std::vector<Tensor> prob = det_->run({{det_input_, text_detect_input(photo, dw, dh)}});
  const std::vector<TextBox> boxes = text_boxes(prob[0], photo.width, photo.height, opt.detect);
  r.detect_ms = ms_since(t0);

  // PP-OCR's recognizer and classifier input heights and widths (rec_image_shape
  // 3,48,320; cls_image_shape 3,48,192) where the models leave them open.
  const int rec_h = int(fixed_dim(rec_->inputs()[0], 2, 48));
  const int cls_h = cls_ ? int(fixed_dim(cls_->inputs()[0], 2, 48)) : 0;
  const int cls_w = cls_ ? int(fixed_dim(cls_->inputs()[0], 3, 192)) : 0;
  for (const TextBox& b : boxes) {
    Image crop = crop_quad(photo, b.quad);
    OcrLine line;
    line.box = b.quad;
    if (cls_) {
      t0 = std::chrono::steady_clock::now();
      const Tensor p = cls_->run({{cls_input_, text_line_input(crop, cls_h, cls_w, cls_w)}})[0];
      KESTREL_CHECK(p.numel() == 2, "the text direction model should give two scores (0 and 180 degrees), got ",
                    shape_str(p.shape()));
      const std::vector<float> s = p.to_f32();
      if (s[1] > s[0] && s[1] > opt.upside_down_score) {
        crop = rotated_half_turn(crop);
        line.turned = true;
      }
      r.classify_ms += ms_since(t0);
    }
    t0 = std::chrono::steady_clock::now();
    // At least PP-OCR's 320-pixel line; a wider line is padded on the right
    // to the next multiple of 160, as PP-OCR pads the lines of a batch to its
    // widest. Few widths mean few input shapes, and a session's first run at
    // a shape costs several later ones.
    const int least = rec_h * 320 / 48, step = rec_h * 160 / 48;
    const int own = int(std::ceil(rec_h * double(crop.width) / crop.height));
    const int width = own <= least ? least : (own + step - 1) / step * step;
    const Tensor p = rec_->run({{rec_input_, text_line_input(crop, rec_h, own, width)}})[0];
    KESTREL_CHECK(p.rank() == 3 && p.dim(0) == 1 && p.dim(2) == chars_->size(),
                  "the text recognition model should give [1, steps, ", chars_->size(), "], got ", shape_str(p.shape()));
    const std::vector<float> probs = p.to_f32();
    const TextLine read = ctc_decode(probs.data(), int(p.dim(1)), int(p.dim(2)), *chars_);
    r.recognize_ms += ms_since(t0);
    if (read.score < opt.min_score) continue;
    line.text = read.text;
    line.score = read.score;
    r.lines.push_back(std::move(line));
  }
  return r;
}

}  // namespace kestrel::vision

// The C API's vision pipelines (kestrel_detector, kestrel_text_reader): the
// library's Detector and TextReader, their results as JSON strings.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "api/c_api_support.h"
#include "api/vision_json.h"
#include "vision/detect.h"
#include "vision/ocr.h"

using kestrel::capi::guarded;
using kestrel::capi::misuse;

struct kestrel_detector {
  std::unique_ptr<kestrel::vision::Detector> detector;
};

struct kestrel_text_reader {
  std::unique_ptr<kestrel::vision::TextReader> reader;
};

namespace {

// A caller's RGB pixels as an Image, its size and stride checked.
kestrel::vision::Image rgb8_image(const char* call, const uint8_t* pixels, int32_t width, int32_t height,
                                  int64_t stride) {
  if (width <= 0 || height <= 0) misuse(call, ": the photo is ", width, "x", height, "; both sides must be positive");
  if (!pixels) misuse(call, ": pixels is NULL");
  if (stride == 0) stride = int64_t(width) * 3;
  if (stride < int64_t(width) * 3) misuse(call, ": stride ", stride, " is less than width x 3 = ", int64_t(width) * 3);
  kestrel::vision::Image img(width, height, 3);
  for (int32_t y = 0; y < height; ++y) {
    const uint8_t* row = pixels + y * stride;
    for (int32_t x = 0; x < width * 3; ++x) img.pixels[size_t(y) * size_t(width) * 3 + size_t(x)] = float(row[x]);
  }
  return img;
}

// The JSON line in memory the caller frees with kestrel_string_free.
char* c_string(const kestrel::api_json::Json& j) {
  const std::string line = kestrel::api_json::json_line(j);
  char* out = static_cast<char*>(std::malloc(line.size() + 1));
  if (!out) throw std::bad_alloc();
  std::memcpy(out, line.c_str(), line.size() + 1);
  return out;
}

char* detect(kestrel_detector* d, const char* call, const kestrel::vision::Image& photo, const std::string& name,
             float conf, float iou) {
  if (!d) misuse(call, ": detector is NULL");
  const kestrel::vision::DetectResult r = d->detector->detect(photo, conf, iou);
  return c_string(kestrel::api_json::detect_json(name, r, d->detector->spec().names));
}

char* read_text(kestrel_text_reader* t, const char* call, const kestrel::vision::Image& photo,
                const std::string& name, float min_score) {
  if (!t) misuse(call, ": reader is NULL");
  if (!(min_score >= 0 && min_score <= 1)) misuse(call, ": min_score must lie in [0, 1], got ", min_score);
  kestrel::vision::OcrOptions opt;
  opt.min_score = min_score;
  return c_string(kestrel::api_json::ocr_json(name, t->reader->read(photo, opt)));
}

}  // namespace

extern "C" {

void kestrel_string_free(char* s) { std::free(s); }

kestrel_detector* kestrel_detector_create(const char* model_path, const char* arch, int32_t width, int32_t height,
                                          const kestrel_session_options* options) {
  return guarded<>(static_cast<kestrel_detector*>(nullptr), [&] {
    const char* call = "kestrel_detector_create";
    if (!model_path) misuse(call, ": model_path is NULL");
    const kestrel::vision::DetectorArch a = kestrel::vision::parse_detector_arch(arch ? arch : "auto");
    auto d = std::make_unique<kestrel_detector>();
    d->detector = std::make_unique<kestrel::vision::Detector>(model_path, kestrel::capi::session_options(call, options),
                                                              a, width, height);
    return d.release();
  });
}

char* kestrel_detector_detect_file(kestrel_detector* detector, const char* image_path, float conf, float iou) {
  return guarded<>(static_cast<char*>(nullptr), [&] {
    if (!detector) misuse("kestrel_detector_detect_file: detector is NULL");
    if (!image_path) misuse("kestrel_detector_detect_file: image_path is NULL");
    return detect(detector, "kestrel_detector_detect_file", kestrel::vision::load_image(image_path), image_path, conf,
                  iou);
  });
}

char* kestrel_detector_detect_rgb8(kestrel_detector* detector, const uint8_t* pixels, int32_t width, int32_t height,
                                   int64_t stride, const char* name, float conf, float iou) {
  return guarded<>(static_cast<char*>(nullptr), [&] {
    const char* call = "kestrel_detector_detect_rgb8";
    return detect(detector, call, rgb8_image(call, pixels, width, height, stride), name ? name : "", conf, iou);
  });
}

void kestrel_detector_free(kestrel_detector* detector) { delete detector; }

kestrel_text_reader* kestrel_text_reader_create(const char* detector_path, const char* recognizer_path,
                                                const char* classifier_path, const char* dictionary_path,
                                                const kestrel_session_options* options) {
  return guarded<>(static_cast<kestrel_text_reader*>(nullptr), [&] {
    const char* call = "kestrel_text_reader_create";
    if (!detector_path || !recognizer_path) misuse(call, ": detector_path and recognizer_path must not be NULL");
    const kestrel::SessionOptions so = kestrel::capi::session_options(call, options);
    const std::string dictionary =
        dictionary_path ? dictionary_path : kestrel::vision::default_dictionary(recognizer_path);
    auto t = std::make_unique<kestrel_text_reader>();
    t->reader = std::make_unique<kestrel::vision::TextReader>(
        kestrel::Session::load(detector_path, so), kestrel::Session::load(recognizer_path, so),
        classifier_path ? kestrel::Session::load(classifier_path, so) : nullptr, dictionary);
    return t.release();
  });
}

char* kestrel_text_reader_read_file(kestrel_text_reader* reader, const char* image_path, float min_score) {
  return guarded<>(static_cast<char*>(nullptr), [&] {
    if (!reader) misuse("kestrel_text_reader_read_file: reader is NULL");
    if (!image_path) misuse("kestrel_text_reader_read_file: image_path is NULL");
    return read_text(reader, "kestrel_text_reader_read_file", kestrel::vision::load_image(image_path), image_path,
                     min_score);
  });
}

char* kestrel_text_reader_read_rgb8(kestrel_text_reader* reader, const uint8_t* pixels, int32_t width, int32_t height,
                                    int64_t stride, const char* name, float min_score) {
  return guarded<>(static_cast<char*>(nullptr), [&] {
    const char* call = "kestrel_text_reader_read_rgb8";
    return read_text(reader, call, rgb8_image(call, pixels, width, height, stride), name ? name : "", min_score);
  });
}

void kestrel_text_reader_free(kestrel_text_reader* reader) { delete reader; }

}  // extern "C"

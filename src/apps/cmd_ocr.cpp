// kestrel ocr: photos to lines of text with PP-OCR's detector, recognizer and
// optional direction classifier, as JSON lines and annotated PNGs.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "apps/cli.h"
#include "apps/json_report.h"
#include "apps/photo_loop.h"
#include "core/error.h"
#include "vision/draw.h"
#include "vision/ocr.h"

namespace kestrel::cli {
namespace fs = std::filesystem;

int cmd_ocr(int argc, char** argv) {
  using namespace vision;
  Args a = parse_args(argc, argv, with_session_flags({"--out", "--cls", "--dict", "--min-score", "--limit-side"}),
                      with_session_switches({"--json"}));
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, a.positional.size() >= 3, "ocr expects DET REC IMAGE|DIR...");
  OcrOptions opt;
  opt.min_score = float(a.get_double("--min-score", opt.min_score));
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, opt.min_score >= 0 && opt.min_score <= 1,
                   "--min-score must lie in [0, 1], got ", opt.min_score);
  opt.detect.limit_side = a.get_int("--limit-side", opt.detect.limit_side);
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, opt.detect.limit_side >= 32 && opt.detect.limit_side <= 8192,
                   "--limit-side must lie in [32, 8192], got ", opt.detect.limit_side);
  const std::vector<std::string> photos = photo_paths({a.positional.begin() + 2, a.positional.end()});
  const std::string out_dir = a.get("--out", ""), cls = a.get("--cls", "");
  if (!out_dir.empty()) fs::create_directories(out_dir);
  const bool json = a.has("--json");

  auto t0 = std::chrono::steady_clock::now();
  const SessionOptions so = session_options(a);
  TextReader reader(Session::load(a.positional[0], so), Session::load(a.positional[1], so),
                    cls.empty() ? nullptr : Session::load(cls, so), a.has("--dict") ? a.get("--dict", "") : default_dictionary(a.positional[1]));
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!json) std::printf("loaded the OCR models in %.1f ms%s\n", load_ms, cls.empty() ? "" : " (with the direction classifier)");

  for_each_photo<Image>(photos, "ocr", 1, [](const std::string& path) { return load_image(path); },
                        [&](size_t first, std::vector<Image>& items) {
    const std::string& path = photos[first];
    Image& photo = items[0];
    const OcrResult r = reader.read(photo, opt);
    const std::string png = annotated_path(out_dir, path);
    if (!png.empty()) {
      std::vector<Quad> quads;
      for (const OcrLine& l : r.lines) quads.push_back(l.box);
      draw_quads(photo, quads);
      write_png(png, photo);
    }
    if (json) {
      Json j = api_json::ocr_json(path, r);
      if (!png.empty()) j["annotated"] = png;
      std::printf("%s\n", json_line(j).c_str());
    } else {
      std::printf("%s: %dx%d, %zu lines (detection %.1f ms, direction %.1f ms, recognition %.1f ms)%s%s\n",
                  path.c_str(), r.width, r.height, r.lines.size(), r.detect_ms, r.classify_ms, r.recognize_ms,
                  png.empty() ? "" : ", wrote ", png.c_str());
      for (const OcrLine& l : r.lines) std::printf("  %.3f  %s\n", l.score, l.text.c_str());
    }
  });
  return 0;
}

}  // namespace kestrel::cli

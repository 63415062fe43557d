// kestrel quantize: a float model to a static int8 QDQ model from a folder of
// calibration samples (.npz by input name, .npy for a one-input model, or
// photos with the pre-processing given by flags), with a report of how far
// each output moved.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/cli.h"
#include "apps/input_files.h"
#include "core/error.h"
#include "quantize/qdq_graph.h"
#include "quantize/quantize.h"
#include "vision/image.h"

namespace kestrel::cli {
namespace fs = std::filesystem;
namespace {

std::string lower_ext(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return e;
}

// "0.485,0.456,0.406" -> three numbers; one number stands for all channels.
std::array<float, 4> channel_values(const Args& a, const std::string& flag, float def) {
  std::array<float, 4> v{def, def, def, def};
  if (!a.has(flag)) return v;
  std::stringstream ss(a.get(flag, ""));
  std::string item;
  std::vector<float> got;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const float f = std::strtof(item.c_str(), &end);
    KESTREL_CHECK_AS(ErrorKind::InvalidArgument, end && *end == 0 && !item.empty() && std::isfinite(f), flag,
                     " takes numbers separated by commas, got '", a.get(flag, ""), "'");
    got.push_back(f);
  }
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, got.size() == 1 || got.size() == 3 || got.size() == 4, flag,
                   " takes one value or one per channel (3 or 4), got ", got.size());
  for (size_t c = 0; c < 4; ++c) v[c] = got[got.size() == 1 ? 0 : std::min(c, got.size() - 1)];
  return v;
}

struct Samples {
  std::vector<std::string> files;
  bool photos = false;
};

Samples calibration_files(const std::string& dir) {
  KESTREL_CHECK_AS(ErrorKind::NoSuchFile, fs::is_directory(dir), "--calib: folder '", dir, "' does not exist");
  Samples s;
  std::vector<std::string> arrays, photos;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string x = lower_ext(e.path());
    if (x == ".npz" || x == ".npy") arrays.push_back(e.path().string());
    if (x == ".jpg" || x == ".jpeg" || x == ".png" || x == ".bmp") photos.push_back(e.path().string());
  }
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, arrays.empty() || photos.empty(), "--calib: folder '", dir,
                   "' mixes arrays (.npz/.npy) and photos; keep one kind of sample per folder");
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, !arrays.empty() || !photos.empty(), "--calib: folder '", dir,
                   "' holds no .npz, .npy, .jpg, .jpeg, .png or .bmp sample");
  s.photos = !photos.empty();
  s.files = s.photos ? photos : arrays;
  std::sort(s.files.begin(), s.files.end());
  return s;
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  Args a = parse_args(argc, argv,
                      with_session_flags({"--calib", "--out", "--method", "--percentile", "--limit", "--check", "--min-cosine", "--size",
                                          "--mean", "--std", "--scale", "--layout"}),
                      with_session_switches({"--per-channel", "--per-tensor", "--bgr", "--int4-weights", "--reduce-range"}));
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, a.positional.size() == 1, "quantize expects one MODEL, got ",
                   a.positional.size(), " positional arguments");
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, a.has("--calib") && a.has("--out"),
                   "quantize needs --calib DIR (the samples) and --out FILE.onnx");
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, !(a.has("--per-channel") && a.has("--per-tensor")),
                   "--per-channel and --per-tensor exclude each other");
  const std::string model = a.positional[0], out = a.get("--out", "");
  quantize::Options opt;
  opt.method = quantize::parse_method(a.get("--method", "minmax"));
  opt.percentile = a.get_double("--percentile", opt.percentile);
  if (a.has("--per-channel")) opt.per_channel = true;
  if (a.has("--per-tensor")) opt.per_channel = false;
  opt.check_samples = a.get_int("--check", opt.check_samples);
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, opt.check_samples >= 1, "--check must be at least 1");
  opt.min_cosine = a.get_double("--min-cosine", opt.min_cosine);
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, opt.min_cosine >= 0 && opt.min_cosine <= 1,
                   "--min-cosine must lie in [0, 1], got ", opt.min_cosine);
  opt.int4_weights = a.has("--int4-weights");
  opt.reduce_range = a.has("--reduce-range");
  opt.session = session_options(a);
  if (opt.session.backend == BackendChoice::Auto) opt.session.backend = BackendChoice::Cpu;

  Samples s = calibration_files(a.get("--calib", ""));
  if (a.has("--limit")) {
    const int limit = a.get_int("--limit", 0);
    KESTREL_CHECK_AS(ErrorKind::InvalidArgument, limit >= 1, "--limit must be at least 1, got ", limit);
    if (s.files.size() > size_t(limit)) s.files.resize(size_t(limit));
  }
  const auto info = Session::load(model, opt.session);
  const std::vector<TensorInfo> inputs = info->inputs();
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, inputs.size() == 1 || (!s.photos && lower_ext(s.files[0]) == ".npz"),
                   "'", model, "' has ", inputs.size(), " inputs: give each sample as an .npz keyed by input name");

  // Photos: resized to the input's size (or --size) and normalized per the flags.
  vision::Normalize norm;
  norm.scale = float(a.get_double("--scale", 1.0 / 255.0));
  norm.mean = channel_values(a, "--mean", 0.0f);
  norm.std = channel_values(a, "--std", 1.0f);
  for (float v : norm.std) KESTREL_CHECK_AS(ErrorKind::InvalidArgument, v != 0, "--std has a zero");
  norm.bgr = a.has("--bgr");
  const std::string layout_name = a.get("--layout", "nchw");
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, layout_name == "nchw" || layout_name == "nhwc",
                   "--layout is nchw or nhwc, got '", layout_name, "'");
  const vision::Layout layout = layout_name == "nchw" ? vision::Layout::NCHW : vision::Layout::NHWC;
  int width = 0, height = 0;
  if (s.photos) {
    if (a.has("--size")) {
      char x = 0, rest = 0;
      const std::string size = a.get("--size", "");
      KESTREL_CHECK_AS(ErrorKind::InvalidArgument,
                       std::sscanf(size.c_str(), "%d%c%d%c", &width, &x, &height, &rest) == 3 && x == 'x' &&
                           width > 0 && height > 0,
                       "--size takes WIDTHxHEIGHT (e.g. 224x224), got '", size, "'");
    } else {
      const auto& shape = inputs[0].shape;
      const bool known = shape && shape->size() == 4;
      const int hd = layout == vision::Layout::NCHW ? 2 : 1;
      KESTREL_CHECK_AS(ErrorKind::InvalidArgument, known && (*shape)[size_t(hd)].known() &&
                                                       (*shape)[size_t(hd + 1)].known(),
                       "input '", inputs[0].name, "' ", inputs[0].shape_str(),
                       " has no fixed height and width: give --size WIDTHxHEIGHT");
      height = int((*shape)[size_t(hd)].value);
      width = int((*shape)[size_t(hd + 1)].value);
    }
  }
  const quantize::SampleSource sample = [&](size_t i) -> std::map<std::string, Tensor> {
    const std::string& f = s.files[i];
    if (s.photos)
      return {{inputs[0].name, vision::to_tensor(vision::resize_bilinear(vision::load_image(f), width, height),
                                                 layout, norm)}};
    if (lower_ext(f) == ".npz") return read_npz(f);
    return {{inputs[0].name, read_input_file(f)}};
  };
  std::fprintf(stderr, "quantize: %zu %s samples from %s, %s\n", s.files.size(), s.photos ? "photo" : "array",
               a.get("--calib", "").c_str(), quantize::name_of(opt.method));
  const quantize::Report rep =
      quantize::quantize_model(model, s.files.size(), sample, opt, [](const char* stage, size_t done, size_t total) {
        progress(stage, int(done), int(total));
      });
  {
    std::ofstream f(out, std::ios::binary);
    KESTREL_CHECK_AS(ErrorKind::InvalidArgument, bool(f), "cannot write '", out, "'");
    f.write(rep.model.data(), std::streamsize(rep.model.size()));
    KESTREL_CHECK_AS(ErrorKind::Failure, bool(f), "writing '", out, "' failed");
  }
  std::printf("wrote %s: %d nodes quantized (int8 weights %s%s, uint8 activations, %s over %zu samples), opset %d\n",
              out.c_str(), rep.quantized_nodes, rep.per_channel ? "per channel" : "per tensor",
              opt.reduce_range ? " within [-64, 64]" : "", quantize::name_of(opt.method), s.files.size(), rep.opset);
  if (rep.int4_nodes)
    std::printf("  of them %d MatMuls with 4-bit weights in blocks of %d (com.microsoft MatMulNBits, float activations)\n",
                rep.int4_nodes, int(quantize::kInt4Block));
  if (rep.converted_from)
    std::printf("  converted from opset %d to %d by ONNX's version converter first\n", rep.converted_from, rep.opset);
  for (const std::string& k : rep.notes) std::printf("  note: %s\n", k.c_str());
  for (const std::string& k : rep.skipped) std::printf("  left in float: %s\n", k.c_str());
  if (rep.worst_cosine != rep.full_cosine)
    std::printf("  with every node quantized the lowest output cosine was %.6f\n", rep.full_cosine);
  std::printf("against the float model on %zu samples:\n", rep.checked_samples);
  for (const auto& o : rep.outputs)
    std::printf("  output '%s': cosine min %.6f mean %.6f, max abs error %.3g of its range\n", o.name.c_str(),
                o.min_cosine, o.mean_cosine, o.max_rel);
  return 0;
}

}  // namespace kestrel::cli

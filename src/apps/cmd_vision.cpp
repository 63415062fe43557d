// kestrel remove-bg: cuts the subject out of a photo with an IS-Net
// segmentation model and writes an RGBA PNG whose alpha is the predicted mask.
#include <chrono>
#include <cstdio>

#include "apps/cli.h"
#include "vision/image.h"

namespace kestrel::cli {
namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int cmd_remove_bg(int argc, char** argv) {
  using namespace vision;
  Args a = parse_args(argc, argv, {"--backend", "--precision", "--threads"}, {});
  KESTREL_CHECK(a.positional.size() == 3, "remove-bg expects MODEL PHOTO OUT.png");
  const std::string &model = a.positional[0], &photo = a.positional[1], &out = a.positional[2];

  auto t0 = std::chrono::steady_clock::now();
  auto s = Session::load(model, session_options(a));
  double load_ms = ms_since(t0);
  KESTREL_CHECK(s->inputs().size() == 1 && s->inputs()[0].shape && s->inputs()[0].shape->size() == 4,
                "remove-bg expects a model with one [1,3,H,W] image input (IS-Net); ", model, " has ",
                s->inputs().size(), " input(s)");
  // IS-Net takes a fixed square input (1024x1024); read it from the model.
  const auto& dims = *s->inputs()[0].shape;
  KESTREL_CHECK(dims[1].known() && dims[1].value == 3 && dims[2].known() && dims[3].known(),
                "remove-bg expects a [1,3,H,W] input with fixed H and W, got ", s->inputs()[0].shape_str());
  int H = int(dims[2].value), W = int(dims[3].value);

  t0 = std::chrono::steady_clock::now();
  Image img = load_image(photo);
  Normalize norm;  // (x - 128) / 256, as @imgly/background-removal feeds IS-Net
  norm.scale = 1.0f / 256.0f;
  norm.mean = {0.5f, 0.5f, 0.5f, 0};
  Tensor input = to_tensor(resize_bilinear(img, W, H), Layout::NCHW, norm);
  double pre_ms = ms_since(t0);

  RunStats st;
  auto outs = s->run({{s->inputs()[0].name, input}}, &st);

  // Output 0 is the final sigmoid mask in [0,1]; bring it back to the photo's size.
  t0 = std::chrono::steady_clock::now();
  Image mask = resize_bilinear(plane_from_tensor(outs[0]), img.width, img.height);
  Image cutout(img.width, img.height, 4);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      for (int c = 0; c < 3; ++c) cutout.at(y, x, c) = img.at(y, x, c);
      cutout.at(y, x, 3) = 255.0f * mask.at(y, x, 0);
    }
  write_png(out, cutout);
  double post_ms = ms_since(t0);

  std::printf("%s: %dx%d photo, model input %dx%d\n", photo.c_str(), img.width, img.height, W, H);
  std::printf("load model %.1f ms, preprocess %.1f ms, inference %.1f ms (backend %s, %d threads), "
              "mask and PNG %.1f ms\n",
              load_ms, pre_ms, st.ms, s->backend_name().c_str(), s->threads(), post_ms);
  std::printf("wrote %s (RGBA, alpha = predicted foreground)\n", out.c_str());
  return 0;
}

}  // namespace kestrel::cli

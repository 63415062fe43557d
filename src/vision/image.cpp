#include "vision/image.h"

#include <algorithm>
#include <cmath>

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

namespace kestrel::vision {

Image load_image(const std::string& path, int channels) {
  KESTREL_CHECK(channels == 3 || channels == 4, "load_image: channels must be 3 or 4, got ", channels);
  int w = 0, h = 0, file_channels = 0;
  unsigned char* px = stbi_load(path.c_str(), &w, &h, &file_channels, channels);
  KESTREL_CHECK(px, "cannot read image '", path, "': ", stbi_failure_reason());
  Image img(w, h, channels);
  std::copy(px, px + img.pixels.size(), img.pixels.begin());
  stbi_image_free(px);
  return img;
}

Image resize_bilinear(const Image& src, int width, int height) {
  KESTREL_CHECK(src.width > 0 && src.height > 0 && width > 0 && height > 0, "resize_bilinear: cannot resize ",
                src.width, "x", src.height, " to ", width, "x", height);
  Image dst(width, height, src.channels);
  // Source coordinate of a destination pixel center, clamped to the edge.
  auto taps = [](int out, int in, int i, int& lo, int& hi, float& frac) {
    float s = std::max(0.0f, (float(i) + 0.5f) * float(in) / float(out) - 0.5f);
    lo = std::min(int(s), in - 1);
    hi = std::min(lo + 1, in - 1);
    frac = s - float(lo);
  };
  std::vector<int> x0(static_cast<size_t>(width)), x1(static_cast<size_t>(width));
  std::vector<float> fx(static_cast<size_t>(width));
  for (int x = 0; x < width; ++x) taps(width, src.width, x, x0[size_t(x)], x1[size_t(x)], fx[size_t(x)]);
  for (int y = 0; y < height; ++y) {
    int y0, y1;
    float fy;
    taps(height, src.height, y, y0, y1, fy);
    for (int x = 0; x < width; ++x) {
      size_t i = size_t(x);
      for (int c = 0; c < src.channels; ++c) {
        float top = src.at(y0, x0[i], c) * (1 - fx[i]) + src.at(y0, x1[i], c) * fx[i];
        float bottom = src.at(y1, x0[i], c) * (1 - fx[i]) + src.at(y1, x1[i], c) * fx[i];
        dst.at(y, x, c) = top * (1 - fy) + bottom * fy;
      }
    }
  }
  return dst;
}

Image append_channel(const Image& src, float value) {
  Image dst(src.width, src.height, src.channels + 1);
  for (int y = 0; y < src.height; ++y)
    for (int x = 0; x < src.width; ++x) {
      for (int c = 0; c < src.channels; ++c) dst.at(y, x, c) = src.at(y, x, c);
      dst.at(y, x, src.channels) = value;
    }
  return dst;
}

Tensor to_tensor(const Image& img, Layout layout, const Normalize& norm) {
  const int C = img.channels, H = img.height, W = img.width;
  KESTREL_CHECK(C >= 1 && C <= 4, "to_tensor: images have 1 to 4 channels, got ", C);
  Shape shape = layout == Layout::NCHW ? Shape{1, C, H, W} : Shape{1, H, W, C};
  Tensor t(DType::Float32, shape);
  float* out = t.data<float>();
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < C; ++c) {
        // With bgr, tensor channel c takes image channel 2-c (alpha stays put).
        int from = norm.bgr && c < 3 ? 2 - c : c;
        float v = (img.at(y, x, from) * norm.scale - norm.mean[size_t(c)]) / norm.std[size_t(c)];
        size_t at = layout == Layout::NCHW ? (size_t(c) * size_t(H) + size_t(y)) * size_t(W) + size_t(x)
                                           : (size_t(y) * size_t(W) + size_t(x)) * size_t(C) + size_t(c);
        out[at] = v;
      }
  return t;
}

Image plane_from_tensor(const Tensor& t) {
  KESTREL_CHECK(t.rank() >= 2, "plane_from_tensor: expected [...,H,W], got ", shape_str(t.shape()));
  for (int i = 0; i + 2 < t.rank(); ++i)
    KESTREL_CHECK(t.dim(i) == 1, "plane_from_tensor: expected leading dims of 1, got ", shape_str(t.shape()));
  Image img(int(t.dim(-1)), int(t.dim(-2)), 1);
  img.pixels = t.to_f32();
  return img;
}

void write_png(const std::string& path, const Image& img) {
  KESTREL_CHECK(img.channels >= 1 && img.channels <= 4, "write_png: images have 1 to 4 channels, got ", img.channels);
  std::vector<unsigned char> px(img.pixels.size());
  for (size_t i = 0; i < px.size(); ++i) px[i] = (unsigned char)std::clamp(std::lround(img.pixels[i]), 0L, 255L);
  int ok = stbi_write_png(path.c_str(), img.width, img.height, img.channels, px.data(), img.width * img.channels);
  KESTREL_CHECK(ok, "cannot write PNG '", path, "'");
}

}  // namespace kestrel::vision

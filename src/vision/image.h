// Photos in and out of Kestrel: load, bilinear resize, pack into a model's
// input tensor with per-channel normalization, and write PNGs.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace kestrel::vision {

// Interleaved (HWC) float pixels; loaded photos hold 0..255 values.
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<float> pixels;
  Image() = default;
  Image(int w, int h, int c) : width(w), height(h), channels(c), pixels(size_t(w) * size_t(h) * size_t(c)) {}
  float& at(int y, int x, int c) { return pixels[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels) + size_t(c)]; }
  float at(int y, int x, int c) const { return pixels[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels) + size_t(c)]; }
};

// JPEG/PNG/BMP/... as RGB (channels = 3) or RGBA (4).
Image load_image(const std::string& path, int channels = 3);
// Bilinear with half-pixel centers (OpenCV's INTER_LINEAR, no antialiasing).
Image resize_bilinear(const Image& src, int width, int height);
// Adds a channel holding `value` everywhere (e.g. an alpha plane of ones).
Image append_channel(const Image& src, float value);

enum class Layout { NCHW, NHWC };
// value = (pixel * scale - mean[c]) / std[c], channels read in reverse order
// (RGB as BGR) when bgr is set.
struct Normalize {
  float scale = 1.0f / 255.0f;
  std::array<float, 4> mean{0, 0, 0, 0};
  std::array<float, 4> std{1, 1, 1, 1};
  bool bgr = false;
};
// A [1,C,H,W] or [1,H,W,C] float32 tensor.
Tensor to_tensor(const Image& img, Layout layout, const Normalize& norm);
// A single-channel image from a [..., H, W] tensor whose leading dims are 1.
Image plane_from_tensor(const Tensor& t);

// 8-bit PNG; pixel values are rounded and clamped to 0..255.
void write_png(const std::string& path, const Image& img);

}  // namespace kestrel::vision

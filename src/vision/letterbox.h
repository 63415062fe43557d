// Fitting a photo into a detector's fixed input: scale by the smaller of the
// two ratios, place the result in the input and fill the rest with a grey.
// Detectors differ in where they place it (YOLOX: the top-left corner;
// Ultralytics: the centre), in rounding the scaled size, and some stretch the
// photo over the whole input instead (UltraFace), so these are parameters,
// and the mapping back to the photo's pixels is kept.
#pragma once
#include "vision/image.h"

namespace kestrel::vision {

enum class LetterboxAlign { TopLeft, Center, Stretch };

struct Letterbox {
  float scale_x = 1, scale_y = 1;  // input pixels per photo pixel (equal unless stretched)
  float pad_x = 0, pad_y = 0;      // where the photo's (0, 0) lands in the input
  // A point in the model's input back in the photo's pixels.
  float photo_x(float x) const { return (x - pad_x) / scale_x; }
  float photo_y(float y) const { return (y - pad_y) / scale_y; }
};

// The photo scaled into a width x height canvas filled with `fill` (0..255).
// TopLeft: the scaled size is floored and the photo sits at (0, 0), as
// YOLOX's preprocessing does; Center: it is rounded and centred, as
// Ultralytics' LetterBox does (the odd pixel of padding goes right and down);
// Stretch: resized to width x height, no padding.
Image letterbox(const Image& photo, int width, int height, LetterboxAlign align, float fill, Letterbox* map);

}  // namespace kestrel::vision

// Fitting a photo into a detector's fixed input without distorting it: scale
// by the smaller of the two ratios, place the result in the input and fill
// the rest with a grey. Detectors differ in where they place it (YOLOX: the
// top-left corner; Ultralytics: the centre) and in rounding the scaled size,
// so both are parameters, and the mapping back to the photo's pixels is kept.
#pragma once
#include "vision/image.h"

namespace kestrel::vision {

enum class LetterboxAlign { TopLeft, Center };

struct Letterbox {
  float scale = 1;           // input pixels per photo pixel
  float pad_x = 0, pad_y = 0;  // where the photo's (0, 0) lands in the input
  // A point in the model's input back in the photo's pixels.
  float photo_x(float x) const { return (x - pad_x) / scale; }
  float photo_y(float y) const { return (y - pad_y) / scale; }
};

// The photo scaled into a width x height canvas filled with `fill` (0..255).
// TopLeft: the scaled size is floored and the photo sits at (0, 0), as
// YOLOX's preprocessing does; Center: it is rounded and centred, as
// Ultralytics' LetterBox does (the odd pixel of padding goes right and down).
Image letterbox(const Image& photo, int width, int height, LetterboxAlign align, float fill, Letterbox* map);

}  // namespace kestrel::vision

// The fused windowed-attention vision encoder node (com.kestrel
// ViTDetEncoder, SAM's image encoder): its inputs and the typed spec in its
// attributes.
//
// Inputs: the residual stream x [batch, height, width, channels] (tokens
// on a grid, channels last), then per layer the slots of families.h's
// LayerSlot (the fused QKV projection split in three) followed by the two
// relative-position tables of its decomposed bias, [2 * rows - 1, head_dim]
// and [2 * cols - 1, head_dim] for the attention grid of rows x cols
// (a window, or the whole grid in a global layer).
#pragma once
#include <string>
#include <vector>

#include "families/families.h"
#include "ir/graph.h"

namespace kestrel::families {

inline constexpr const char* kViTDetEncoderOp = "ViTDetEncoder";
enum ViTDetSlot { kRelPosH = kSlotsPerLayer, kRelPosW, kViTDetSlotsPerLayer };

struct ViTDetSpec {
  int64_t layers = 0, heads = 0, head_dim = 0;
  std::vector<float> epsilons;   // two per layer
  std::vector<float> scales;     // per layer
  std::vector<int64_t> windows;  // per layer: the window side; 0 = global attention
  std::vector<int64_t> taps;
  ops::Activation activation = ops::Activation::None;  // the MLP's

  static ViTDetSpec of(const ir::Node& n) {
    ViTDetSpec s;
    s.layers = n.attr_i("layers", 0);
    s.heads = n.attr_i("heads", 0);
    s.head_dim = n.attr_i("head_dim", 0);
    s.epsilons = n.attr_floats("epsilons");
    s.scales = n.attr_floats("scales");
    s.windows = n.attr_ints("windows");
    s.taps = n.attr_ints("taps");
    s.activation = mlp_activation(n);
    const int64_t L = s.layers;
    if (L <= 0 || s.heads <= 0 || s.head_dim <= 0 || int64_t(n.inputs.size()) != 1 + L * kViTDetSlotsPerLayer ||
        int64_t(s.epsilons.size()) != 2 * L || int64_t(s.scales.size()) != L || int64_t(s.windows.size()) != L ||
        s.taps.size() != n.outputs.size())
      fail(n.where(), ": inputs and attributes do not describe ", L, " windowed encoder layers");
    return s;
  }
  int input(int64_t layer, int slot) const { return int(1 + layer * kViTDetSlotsPerLayer + slot); }
};

// How a layer of a ViTDet encoder tiles its grid of height x width tokens:
// windows of side `window` over the grid padded up to a multiple of it (the
// padded tokens are zeros after the LayerNorm, and take part as keys), or
// one window of the whole grid (window 0).
struct WindowGrid {
  int64_t rows = 0, cols = 0;          // the attention grid: a window's side, or the grid
  int64_t per_row = 1, per_col = 1;    // windows along the height and the width
  int64_t tokens() const { return rows * cols; }
  static WindowGrid of(int64_t height, int64_t width, int64_t window) {
    WindowGrid w;
    if (window <= 0) {
      w.rows = height, w.cols = width;
      return w;
    }
    w.rows = w.cols = window;
    w.per_row = (height + window - 1) / window;
    w.per_col = (width + window - 1) / window;
    return w;
  }
};

}  // namespace kestrel::families

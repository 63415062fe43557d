// Window geometry shared by Conv, ConvInteger, ConvTranspose and the pools:
// reading kernel/stride/dilation/pad attributes and resolving auto_pad into
// explicit begin/end pads and output sizes.
#pragma once
#include <string>
#include <vector>

#include "ops/common.h"

namespace kestrel::ops {

struct WindowGeom {
  int nd = 0;                                   // spatial rank
  std::vector<int64_t> in, kernel, out;         // spatial sizes
  std::vector<int64_t> stride, dil, pad_begin, pad_end;
  int64_t in_size() const { return prod(in); }
  int64_t out_size() const { return prod(out); }
  int64_t kernel_size() const { return prod(kernel); }
  static int64_t prod(const std::vector<int64_t>& v) {
    int64_t p = 1;
    for (int64_t x : v) p *= x;
    return p;
  }
};

// A 1-D or 2-D window geometry as plain numbers (1-D runs as H = 1), for the
// kernels that walk rows: im2col/col2im and the depthwise convolution.
struct Window2D {
  int64_t H, W, KH, KW, OH, OW, SH, SW, DH, DW, PH, PW;
  explicit Window2D(const WindowGeom& g) {
    bool two = g.nd == 2;
    size_t x = two ? 1 : 0;
    H = two ? g.in[0] : 1, W = g.in[x];
    KH = two ? g.kernel[0] : 1, KW = g.kernel[x];
    OH = two ? g.out[0] : 1, OW = g.out[x];
    SH = two ? g.stride[0] : 1, SW = g.stride[x];
    DH = two ? g.dil[0] : 1, DW = g.dil[x];
    PH = two ? g.pad_begin[0] : 0, PW = g.pad_begin[x];
  }
};

// Reads strides/dilations/pads/auto_pad for a sliding window over `in`
// (spatial dims) with the given kernel and fills in the output size.
// ceil_mode is the pools' rounding; convolutions pass false.
inline WindowGeom window_geom(const KernelContext& ctx, const std::vector<int64_t>& in,
                              const std::vector<int64_t>& kernel, bool ceil_mode) {
  const ir::Node& n = ctx.node;
  WindowGeom g;
  g.nd = int(in.size());
  g.in = in;
  g.kernel = kernel;
  size_t nd = in.size();
  if (kernel.size() != nd) ctx.fail("kernel_shape has ", kernel.size(), " dims but the input has ", nd, " spatial dims");
  // (Read in place: this runs for every convolution and pool of every run.)
  const ir::Attribute* a_stride = n.attr("strides");
  const ir::Attribute* a_dil = n.attr("dilations");
  const ir::Attribute* a_pads = n.attr("pads");
  if (a_stride) g.stride = a_stride->ints; else g.stride.assign(nd, 1);
  if (a_dil) g.dil = a_dil->ints; else g.dil.assign(nd, 1);
  if (g.stride.size() != nd) ctx.fail("strides has ", g.stride.size(), " values, expected ", nd);
  if (g.dil.size() != nd) ctx.fail("dilations has ", g.dil.size(), " values, expected ", nd);
  if (a_pads && a_pads->ints.size() != 2 * nd) ctx.fail("pads has ", a_pads->ints.size(), " values, expected ", 2 * nd);
  const ir::Attribute* a_auto = n.attr("auto_pad");
  const std::string auto_pad = a_auto ? a_auto->s : "NOTSET";
  if (a_pads) {
    g.pad_begin.assign(a_pads->ints.begin(), a_pads->ints.begin() + long(nd));
    g.pad_end.assign(a_pads->ints.begin() + long(nd), a_pads->ints.end());
  } else {
    g.pad_begin.assign(nd, 0);
    g.pad_end.assign(nd, 0);
  }
  g.out.resize(nd);
  for (size_t i = 0; i < nd; ++i) {
    if (g.stride[i] < 1) ctx.fail("strides must be positive, got ", g.stride[i]);
    if (g.dil[i] < 1) ctx.fail("dilations must be positive, got ", g.dil[i]);
    if (kernel[i] < 1) ctx.fail("kernel dims must be positive, got ", kernel[i]);
    // Sizes, strides, dilations and pads are the model's numbers: every sum
    // and product is checked, so a wrapped extent cannot pass for a small one.
    int64_t ext = 0;  // span of one window
    if (!mul_fits(g.dil[i], kernel[i] - 1, ext) || !add_fits(ext, 1, ext))
      ctx.fail("a window of kernel ", kernel[i], " at dilation ", g.dil[i], " spans more than int64 holds (it overflows)");
    // ceil(a / s) for a >= 0, without the a + s - 1 that can overflow.
    auto ceil_div = [](int64_t a, int64_t s) { return a == 0 ? 0 : (a - 1) / s + 1; };
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.out[i] = ceil_div(in[i], g.stride[i]);
      int64_t total = 0;  // (out - 1) * stride < in, so only + ext can overflow
      if (!add_fits((g.out[i] - 1) * g.stride[i], ext, total))
        ctx.fail("a window of extent ", ext, " on spatial dim ", i, " overflows int64 when padded");
      total = std::max<int64_t>(0, total - in[i]);
      int64_t small = total / 2;
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : total - small;
      g.pad_end[i] = total - g.pad_begin[i];
      continue;
    }
    if (auto_pad == "VALID") {
      g.pad_begin[i] = g.pad_end[i] = 0;
    } else if (auto_pad != "NOTSET") {
      ctx.fail("auto_pad '", auto_pad, "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    }
    if (g.pad_begin[i] < 0 || g.pad_end[i] < 0) ctx.fail("pads must be non-negative");
    int64_t padded = 0;
    if (!add_fits(in[i], g.pad_begin[i], padded) || !add_fits(padded, g.pad_end[i], padded))
      ctx.fail("spatial dim ", i, " of size ", in[i], " with pads ", g.pad_begin[i], "+", g.pad_end[i],
               " overflows int64");
    int64_t span = padded - ext;
    if (span < 0)
      ctx.fail("window of extent ", ext, " does not fit spatial dim ", i, " of size ", in[i], " with pads ",
               g.pad_begin[i], "+", g.pad_end[i]);
    g.out[i] = (ceil_mode ? ceil_div(span, g.stride[i]) : span / g.stride[i]) + 1;
    // With ceil_mode the last window must still start inside the input or its
    // begin padding (a start past int64 certainly does not).
    int64_t last_start = 0;
    if (ceil_mode && (!mul_fits(g.out[i] - 1, g.stride[i], last_start) || last_start >= in[i] + g.pad_begin[i]))
      --g.out[i];
  }
  return g;
}

// Spatial dims of an N,C,spatial... shape.
inline std::vector<int64_t> spatial_dims(const Shape& s) { return std::vector<int64_t>(s.begin() + 2, s.end()); }

}  // namespace kestrel::ops

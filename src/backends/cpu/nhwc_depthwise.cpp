// The channels-last depthwise convolution's driver (nhwc_depthwise.h): the
// packed weights, the taps each output row and each edge position reads,
// rows over threads, and each row's residual and activation.
#include "backends/cpu/nhwc_depthwise.h"

#include <algorithm>
#include <limits>

#include "ops/common.h"
#include "ops/conv_util.h"

namespace kestrel::backends::cpu {

using ops::ceil_div;
using ops::Window2D;

namespace {


// The taps [first, last) of a window starting at input index i0 (dilation
// d, k taps) that fall inside [0, size): an empty range (first == last)
// where none does, as for a window wholly in padding wider than it.
void taps_inside(int64_t i0, int64_t d, int64_t k, int64_t size, int& first, int& last) {
  const int64_t f = std::min(k, i0 >= 0 ? 0 : ceil_div(-i0, d));
  const int64_t l = size - 1 - i0 < 0 ? 0 : std::min(k, (size - 1 - i0) / d + 1);
  first = int(f);
  last = int(std::max(f, l));
}

}  // namespace

const NhwcDepthwiseKernel* nhwc_depthwise_kernel(CpuIsa isa) {
#if KESTREL_X86
  if (isa == CpuIsa::Avx512) return &nhwc_depthwise_avx512::kernel;
  if (isa == CpuIsa::Avx2) return &nhwc_depthwise_avx2::kernel;
#endif
  (void)isa;
  return nullptr;
}

const NhwcDepthwiseKernel* nhwc_depthwise_for(const ops::ConvShape& s, CpuIsa isa) {
  if (isa != CpuIsa::Avx512 || !nhwc_depthwise_suits(s)) return nullptr;
  return s.C % 16 != 0 && s.C % 8 == 0 ? nhwc_depthwise_kernel(CpuIsa::Avx2) : nhwc_depthwise_kernel(CpuIsa::Avx512);
}

bool depthwise_row_tiles(int64_t KH, int64_t KW, int64_t SW, int64_t DW) {
  return KH == KW && (KH == 3 || KH == 5) && DW == 1 && (SW == 1 || SW == 2);
}

bool nhwc_depthwise_suits(const ops::ConvShape& s) {
  return s.g.nd == 2 && s.group == s.C && s.M == s.C && s.Cg == 1 && s.Mg == 1;
}

NhwcDepthwisePacked pack_nhwc_depthwise(const ops::ConvShape& s, int width, const float* w, const float* bias) {
  const int64_t taps = s.g.kernel_size(), blocks = ceil_div(s.C, width);
  NhwcDepthwisePacked p;
  p.width = width;
  p.w.assign(size_t(blocks * taps * width), 0.f);
  p.bias.assign(size_t(blocks * width), 0.f);
  for (int64_t c = 0; c < s.C; ++c) {
    float* pc = p.w.data() + (c / width) * taps * width + c % width;
    for (int64_t t = 0; t < taps; ++t) pc[t * width] = w[c * taps + t];
    if (bias) p.bias[size_t(c)] = bias[c];
  }
  return p;
}

void nhwc_depthwise(int threads, const NhwcDepthwiseKernel& kernel, const ops::ConvShape& s, const float* x,
                    const NhwcDepthwisePacked& packed, const float* residual, const ops::Epilogue& epi, float* y) {
  const Window2D v(s.g);
  const int64_t C = s.C, width = kernel.width, blocks = ceil_div(C, width), taps = v.KH * v.KW;
  // Relu and Clip in the tile's registers where nothing comes before them;
  // a residual (added first) or another activation on each finished row.
  const bool relu = epi.kind == ops::Activation::Relu, clip = epi.kind == ops::Activation::Clip;
  const bool clamp = !residual && (relu || clip);
  const bool finish_rows = !clamp && (residual || epi.kind != ops::Activation::None);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // The output columns whose windows read only inside the input's columns.
  const int64_t ow_lo = std::min(v.OW, ceil_div(v.PW, v.SW));
  const int64_t right = v.W - 1 + v.PW - (v.KW - 1) * v.DW;
  const int64_t ow_hi = right < 0 ? ow_lo : std::clamp(right / v.SW + 1, ow_lo, v.OW);
  const bool whole_rows = depthwise_row_tiles(v.KH, v.KW, v.SW, v.DW);
  // Rows of outputs are the tasks; a map of few rows splits its channel
  // blocks too, so every thread has work.
  const int64_t rows = s.N * v.OH;
  const int64_t parts = rows >= 4 * int64_t(threads) ? 1 : std::min(blocks, ceil_div(4 * int64_t(threads), rows));
  const int64_t part_blocks = ceil_div(blocks, parts);
  ops::parallel_for(threads, rows * parts, 1, [&](int64_t task) {
    const int64_t row = task / parts, n = row / v.OH, oh = row % v.OH;
    const int64_t b0 = (task % parts) * part_blocks, b1 = std::min(blocks, b0 + part_blocks);
    const int64_t ih0 = oh * v.SH - v.PH;
    DepthwiseRun r{};
    r.x = x + n * v.H * v.W * C;
    r.pos_step = v.SW * C, r.row_step = v.DH * v.W * C, r.col_step = v.DW * C;
    taps_inside(ih0, v.DH, v.KH, v.H, r.ky0, r.ky1);
    r.ystep = C;
    r.in_col = -v.PW, r.in_width = v.W;
    r.clamp = clamp;
    r.lo = relu ? 0.f : (clip ? epi.a : -kInf);
    r.hi = clip ? epi.b : kInf;
    float* yrow = y + row * v.OW * C;
    for (int64_t b = b0; b < b1; ++b) {
      r.w = packed.w.data() + b * taps * width;
      r.bias = packed.bias.data() + b * width;
      r.valid = int(std::min(width, C - b * width));
      // One run for the columns inside, one a position at each edge.
      auto run = [&](int64_t ow, int64_t count, int kx0, int kx1) {
        r.base = (ih0 * v.W + ow * v.SW - v.PW) * C + b * width;
        r.count = count, r.kx0 = kx0, r.kx1 = kx1;
        r.y = yrow + ow * C + b * width;
        kernel.run(r, int(v.KH), int(v.KW));
      };
      auto edge = [&](int64_t ow) {
        int kx0, kx1;
        taps_inside(ow * v.SW - v.PW, v.DW, v.KW, v.W, kx0, kx1);
        run(ow, 1, kx0, kx1);
      };
      if (whole_rows) {
        r.whole_row = true;
        run(0, v.OW, 0, int(v.KW));
        continue;
      }
      for (int64_t ow = 0; ow < ow_lo; ++ow) edge(ow);
      if (ow_hi > ow_lo) run(ow_lo, ow_hi - ow_lo, 0, int(v.KW));
      for (int64_t ow = std::max(ow_lo, ow_hi); ow < v.OW; ++ow) edge(ow);
    }
    if (!finish_rows) return;
    // (Epilogue::finish: the residual, then the activation, one vectorized pass.)
    const float* rrow = residual ? residual + row * v.OW * C : nullptr;
    if (parts == 1) return epi.finish(yrow, v.OW * C, nullptr, rrow);
    const int64_t c0 = b0 * width, c1 = std::min(C, b1 * width);
    if (c0 >= c1) return;
    for (int64_t ow = 0; ow < v.OW; ++ow)
      epi.finish(yrow + ow * C + c0, c1 - c0, nullptr, rrow ? rrow + ow * C + c0 : nullptr);
  });
}

}  // namespace kestrel::backends::cpu

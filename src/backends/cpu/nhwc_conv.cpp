// The channels-last direct convolution's driver (nhwc_conv.h): the padded
// copy of the input, the packed weights, rows of outputs over threads, and
// each row's residual and activation.
#include "backends/cpu/nhwc_conv.h"

#include <algorithm>
#include <cstring>

#include "ops/common.h"
#include "ops/conv_util.h"

namespace kestrel::backends::cpu {

using ops::ceil_div;
using ops::Window2D;

namespace {
constexpr int kMaxPositions = 16;  // (a tile's positions, at most, narrow tiles' too)
}  // namespace

const NhwcConvKernel* nhwc_conv_kernel(CpuIsa isa) {
#if KESTREL_X86
  if (isa == CpuIsa::Avx2) return &nhwc_conv_avx2::kernel;
#endif
  (void)isa;
  return nullptr;
}

bool nhwc_conv_suits(const ops::ConvShape& s, bool residual) {
  if (s.g.nd != 2 || s.group != 1 || s.Cg < 8) return false;
  return s.g.kernel_size() > 1 || (residual && s.M % 8 != 0);
}

NhwcPacked pack_nhwc_conv(const ops::ConvShape& s, const float* w, const float* bias) {
  const int64_t taps = s.g.kernel_size(), C = s.Cg, blocks = ceil_div(s.M, kNhwcBlock);
  NhwcPacked p;
  p.w.assign(size_t(blocks * taps * C * kNhwcBlock), 0.f);
  p.bias.assign(size_t(blocks * kNhwcBlock), 0.f);
  for (int64_t m = 0; m < s.M; ++m) {
    float* pm = p.w.data() + (m / kNhwcBlock) * taps * C * kNhwcBlock + m % kNhwcBlock;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < taps; ++t) pm[(t * C + c) * kNhwcBlock] = w[(m * C + c) * taps + t];
    if (bias) p.bias[size_t(m)] = bias[m];
  }
  return p;
}

void nhwc_conv(int threads, const NhwcConvKernel& kernel, const ops::ConvShape& s, const float* x,
               const NhwcPacked& packed, const float* residual, const ops::Epilogue& epi, float* y) {
  const Window2D v(s.g);
  const int64_t C = s.C, M = s.M, taps = v.KH * v.KW, blocks = ceil_div(M, kNhwcBlock);
  // The input's rows and columns the windows reach, with the padding as zeros.
  const int64_t Hp = (v.OH - 1) * v.SH + (v.KH - 1) * v.DH + 1, Wp = (v.OW - 1) * v.SW + (v.KW - 1) * v.DW + 1;
  std::vector<int64_t> off(static_cast<size_t>(taps));
  for (int64_t kh = 0; kh < v.KH; ++kh)
    for (int64_t kw = 0; kw < v.KW; ++kw) off[size_t(kh * v.KW + kw)] = (kh * v.DH * Wp + kw * v.DW) * C;
  // Where the windows read exactly the input (no padding, nothing past the
  // last window: a 1x1 layer of stride 1), they read it in place.
  const bool in_place = v.PH == 0 && v.PW == 0 && Hp == v.H && Wp == v.W;
  static thread_local std::vector<float> padded;
  if (!in_place) padded.resize(size_t(Hp * Wp * C));
  float* padded_rows = padded.data();
  // Rows of outputs are the tasks; a map of few rows splits its channel
  // blocks too, so every thread has work.
  const int64_t parts = v.OH >= 4 * int64_t(threads) ? 1 : std::min(blocks, ceil_div(4 * int64_t(threads), v.OH));
  const int64_t part_blocks = ceil_div(blocks, parts);
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * v.H * v.W * C;
    const float* xp = in_place ? xn : padded_rows;
    if (!in_place) ops::parallel_for(threads, Hp, 8, [&](int64_t i) {
      float* row = padded_rows + i * Wp * C;
      const int64_t ih = i - v.PH;
      if (ih < 0 || ih >= v.H) {
        std::fill(row, row + Wp * C, 0.f);
        return;
      }
      const int64_t lead = std::min(Wp, v.PW), count = std::clamp<int64_t>(v.W, 0, Wp - lead);
      std::fill(row, row + lead * C, 0.f);
      std::memcpy(row + lead * C, xn + ih * v.W * C, size_t(count * C) * sizeof(float));
      std::fill(row + (lead + count) * C, row + Wp * C, 0.f);
    });
    float* yn = y + n * v.OH * v.OW * M;
    const float* rn = residual ? residual + n * v.OH * v.OW * M : nullptr;
    ops::parallel_for(threads, v.OH * parts, 1, [&](int64_t task) {
      const int64_t oh = task / parts, b0 = (task % parts) * part_blocks, b1 = std::min(blocks, b0 + part_blocks);
      const float* xrow = xp + oh * v.SH * Wp * C;
      float* yrow = yn + oh * v.OW * M;
      float ragged[kNhwcBlock * kMaxPositions];  // a last block of fewer than kNhwcBlock channels
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t m0 = b * kNhwcBlock, mc = std::min<int64_t>(kNhwcBlock, M - m0);
        const float* w = packed.w.data() + b * taps * C * kNhwcBlock;
        const float* bias = packed.bias.data() + m0;
        // A last block of at most narrow_width channels takes the narrow tile.
        const bool narrow = mc <= kernel.narrow_width;
        const auto tile = narrow ? kernel.narrow_tile : kernel.tile;
        const int positions = narrow ? kernel.narrow_positions : kernel.positions;
        const int width = narrow ? kernel.narrow_width : kNhwcBlock;
        for (int64_t ow = 0; ow < v.OW; ow += positions) {
          const int count = int(std::min<int64_t>(positions, v.OW - ow));
          const float* xs = xrow + ow * v.SW * C;
          if (mc == width) {
            tile(count, taps, off.data(), C, xs, v.SW * C, w, bias, yrow + ow * M + m0, M);
            continue;
          }
          tile(count, taps, off.data(), C, xs, v.SW * C, w, bias, ragged, width);
          for (int p = 0; p < count; ++p)
            std::memcpy(yrow + (ow + p) * M + m0, ragged + p * width, size_t(mc) * sizeof(float));
        }
      }
      // The row's residual and activation while it is in cache (its blocks
      // of channels, where the row was split).
      const int64_t m0 = b0 * kNhwcBlock, m1 = std::min(M, b1 * kNhwcBlock);
      if (m0 >= m1) return;
      // (Epilogue::finish: the residual, then the activation, one vectorized pass.)
      if (!rn && epi.kind == ops::Activation::None) return;
      if (parts == 1) return epi.finish(yrow, v.OW * M, nullptr, rn ? rn + oh * v.OW * M : nullptr);
      for (int64_t ow = 0; ow < v.OW; ++ow)
        epi.finish(yrow + ow * M + m0, m1 - m0, nullptr, rn ? rn + (oh * v.OW + ow) * M + m0 : nullptr);
    });
  }
}

}  // namespace kestrel::backends::cpu

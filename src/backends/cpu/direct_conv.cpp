// The direct convolution's driver (direct_conv.h): the phase-split copy of
// the input, the packed weights, the split of the work over threads, and
// each block's bias, residual and activation.
#include "backends/cpu/direct_conv.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/common.h"
#include "ops/conv_util.h"

namespace kestrel::backends::cpu {

using ops::ceil_div;
using ops::Window2D;

namespace {
typedef float v4 __attribute__((vector_size(16)));
}  // namespace

const DirectConvKernel& direct_conv_kernel(CpuIsa isa) {
#if KESTREL_X86
  if (isa == CpuIsa::Avx512) return direct_conv_avx512::kernel;
  if (isa == CpuIsa::Avx2) return direct_conv_avx2::kernel;
#endif
  (void)isa;
  return direct_conv_portable::kernel;
}

bool direct_conv_suits(const ops::ConvShape& s, CpuIsa isa) {
  if (s.g.nd < 1 || s.g.nd > 2) return false;
  if (s.Cg == 1 && s.group > 1) return false;  // depthwise: its own kernel
  // 1x1 layers are a plain product on the input in place, which oneDNN's
  // SGEMM runs within 10 % of the tile's speed or faster (measured on
  // YOLOX-nano's and M-LSD's shapes, 1 and 2 threads); the direct form wins
  // where it spares im2col, unless the map is so small that the columns
  // computed past each row's end and the last tile's tail (over a tenth of
  // the outputs) cost more than the gather.
  const Window2D v(s.g);
  if (v.KH * v.KW == 1) return false;
  // A few output positions (a 1-D convolution over a short signal: Silero
  // VAD's encoder, 3 positions from 129 channels) fill a tile of 48 with
  // 3: the narrow product on windows gathered as rows wastes nothing (Silero
  // VAD at 1 thread: 0.25 -> 0.066 ms a run).
  if (v.OH * v.OW <= kNarrowPositionsAtMost) return false;
  const int64_t Wp = (v.OW - 1) * v.SW + (v.KW - 1) * v.DW + 1, Wq = ceil_div(Wp, v.SW);
  const int64_t TW = direct_conv_kernel(isa).positions, computed = ceil_div(v.OH * Wq, TW) * TW;
  // Small layers (under ~2M multiply-adds) take it whatever the waste: there
  // the fixed costs of im2col and oneDNN's packing dominate (UltraFace's
  // heads, 256 channels to 6 at 4x5: 0.036 against 0.057 ms).
  if (s.N * s.M * s.Cg * v.KH * v.KW * v.OH * v.OW < (int64_t(1) << 21)) return true;
  return computed * 10 <= v.OH * v.OW * 11;
}

namespace {

// Where each tap reads, relative to the output position's own place in the
// input's phase-split, zero-padded copy, [channel][row phase][column
// phase][Hq][Wq].
struct Layout {
  int64_t Hq = 0, Wq = 0;  // a phase plane's rows and columns
  int64_t grid = 0;        // output positions computed: OH rows of Wq
  int64_t size = 0;        // the copy's floats, with room for the last tile's reads
  std::vector<int64_t> off;
};

Layout layout_of(const Window2D& v, int64_t Cg, int64_t positions) {
  Layout l;
  // The padded input's rows and columns the windows reach, in phases.
  const int64_t Hp = (v.OH - 1) * v.SH + (v.KH - 1) * v.DH + 1, Wp = (v.OW - 1) * v.SW + (v.KW - 1) * v.DW + 1;
  l.Hq = ceil_div(Hp, v.SH), l.Wq = ceil_div(Wp, v.SW), l.grid = v.OH * l.Wq;
  const int64_t plane = l.Hq * l.Wq;
  l.off.resize(size_t(Cg * v.KH * v.KW));
  int64_t reach = 0;
  for (int64_t c = 0, k = 0; c < Cg; ++c)
    for (int64_t kh = 0; kh < v.KH; ++kh)
      for (int64_t kw = 0; kw < v.KW; ++kw, ++k) {
        const int64_t dh = kh * v.DH, dw = kw * v.DW;
        l.off[size_t(k)] = ((c * v.SH + dh % v.SH) * v.SW + dw % v.SW) * plane + (dh / v.SH) * l.Wq + dw / v.SW;
        reach = std::max(reach, l.off[size_t(k)]);
      }
  l.size = std::max(Cg * v.SH * v.SW * plane, reach + ceil_div(l.grid, positions) * positions);
  return l;
}

// The phase-split, zero-padded copy of one group's Cg input planes.
void fill_phases(int threads, const Window2D& v, const Layout& l, int64_t Cg, const float* x,
                 float* src) {
  const int64_t plane = l.Hq * l.Wq, IS = v.H * v.W;
  ops::parallel_for(threads, Cg, 1, [&](int64_t c) {
    const float* xc = x + c * IS;
    float* sc = src + c * v.SH * v.SW * plane;
    // Each input row once into all its column phases, while it is in L1.
    for (int64_t rh = 0; rh < v.SH; ++rh)
      for (int64_t i = 0; i < l.Hq; ++i)
        for (int64_t rw = 0; rw < v.SW; ++rw) {
          float* row = sc + (rh * v.SW + rw) * plane + i * l.Wq;
          const int64_t ih = i * v.SH + rh - v.PH;
          if (ih < 0 || ih >= v.H) {
            std::fill(row, row + l.Wq, 0.f);
            continue;
          }
          const float* xr = xc + ih * v.W;
          if (v.SW == 1) {  // the row itself, between zeros of the padding
            const int64_t lead = std::min(l.Wq, std::max<int64_t>(0, v.PW - rw));
            const int64_t iw0 = lead + rw - v.PW, count = std::clamp<int64_t>(v.W - iw0, 0, l.Wq - lead);
            std::fill(row, row + lead, 0.f);
            std::copy(xr + iw0, xr + iw0 + count, row + lead);
            std::fill(row + lead + count, row + l.Wq, 0.f);
            continue;
          }
          // Columns j with input column j * SW + rw - PW inside the row.
          const int64_t ja = std::min(l.Wq, std::max<int64_t>(0, ceil_div(v.PW - rw, v.SW)));
          const int64_t jb = std::max(ja, std::min(l.Wq, ceil_div(v.W + v.PW - rw, v.SW)));
          const float* xs = xr + rw - v.PW;
          for (int64_t j = 0; j < ja; ++j) row[j] = 0.f;
          int64_t j = ja;
          if (v.SW == 2)  // four at a time: two loads, their even lanes
            for (; j + 4 <= jb && 2 * j + 7 < v.W - rw + v.PW; j += 4) {
              v4 lo, hi;
              std::memcpy(&lo, xs + 2 * j, sizeof lo);
              std::memcpy(&hi, xs + 2 * j + 4, sizeof hi);
              const v4 even = __builtin_shufflevector(lo, hi, 0, 2, 4, 6);
              std::memcpy(row + j, &even, sizeof even);
            }
          for (; j < jb; ++j) row[j] = xs[j * v.SW];
          for (int64_t j = jb; j < l.Wq; ++j) row[j] = 0.f;
        }
  });
  const int64_t filled = Cg * v.SH * v.SW * plane;
  std::fill(src + filled, src + l.size, 0.f);
}

}  // namespace

std::vector<float> pack_direct_conv_weights(const float* w, int64_t M, int64_t group, int64_t K) {
  const int64_t Mg = M / group, blocks = ceil_div(Mg, kPackRows);
  std::vector<float> p(size_t(group * blocks * K * kPackRows), 0.f);
  for (int64_t gi = 0; gi < group; ++gi)
    for (int64_t m = 0; m < Mg; ++m) {
      const float* wm = w + (gi * Mg + m) * K;
      float* pm = p.data() + ((gi * blocks + m / kPackRows) * K) * kPackRows + m % kPackRows;
      for (int64_t k = 0; k < K; ++k) pm[k * kPackRows] = wm[k];
    }
  return p;
}

void direct_conv(int threads, const ops::ConvShape& s, const float* x, const float* w, const float* packed,
                 const float* bias, const float* residual, const ops::Epilogue& epi, float* y, CpuIsa isa) {
  const DirectConvKernel& kern = direct_conv_kernel(isa);
  const Window2D v(s.g);
  const int64_t TW = kern.positions, K = s.Cg * v.KH * v.KW, IS = v.H * v.W, OS = v.OH * v.OW;
  const Layout l = layout_of(v, s.Cg, TW);
  std::vector<float> packed_here;
  if (!packed) packed_here = pack_direct_conv_weights(w, s.M, s.group, K), packed = packed_here.data();
  const int64_t blocks = ceil_div(s.Mg, kPackRows), ntiles = ceil_div(l.grid, TW);
  // Under ~2M multiply-adds a team of threads costs more to wake than it
  // saves (UltraFace's heads: 6 and 12 channels of 4x5 from 256).
  if (s.N * s.group * blocks * kPackRows * K * ntiles * TW < (int64_t(1) << 21)) threads = 1;
  // Taps per pass over a tile: the tile's input runs stay in L1 while every
  // block of output channels reads them.
  const int64_t kstep = std::max<int64_t>(32, 6144 / TW);
  // Work: chunks of tiles x ranges of channel blocks, at least four tasks a
  // thread of near-equal size (the threads take equal runs of tasks). A
  // chunk's outputs (every channel of its range) stay in L2 until finished;
  // small maps split the channels too.
  const int64_t parts = ntiles >= 4 * int64_t(threads) ? 1 : std::min(blocks, ceil_div(4 * int64_t(threads), ntiles));
  const int64_t part_blocks = ceil_div(blocks, parts);
  const int64_t cap = std::max<int64_t>(1, 32768 / (part_blocks * kPackRows * TW));
  const int64_t chunk = ceil_div(ntiles, std::min(ntiles, std::max(ceil_div(ntiles, cap), ceil_div(4 * int64_t(threads), parts))));
  const int64_t chunks = ceil_div(ntiles, chunk);
  static thread_local std::vector<float> src_buf;
  src_buf.resize(size_t(l.size));
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t gi = 0; gi < s.group; ++gi) {
      fill_phases(threads, v, l, s.Cg, x + (n * s.C + gi * s.Cg) * IS, src_buf.data());
      const float* src = src_buf.data();
      const float* wg = packed + gi * blocks * K * kPackRows;
      ops::parallel_for(threads, chunks * parts, 1, [&](int64_t task) {
        const int64_t c0 = (task / parts) * chunk, c1 = std::min(ntiles, c0 + chunk);
        const int64_t b0 = (task % parts) * part_blocks, b1 = std::min(blocks, b0 + part_blocks);
        if (b0 >= b1) return;
        const int64_t m0 = b0 * kPackRows, m1 = std::min(s.Mg, b1 * kPackRows);
        // Where the tiles' rows are the output's own (no columns past a row's
        // end: 1-wide windows at stride 1) and the chunk ends on a whole
        // tile, the sums go straight into Y; else into a buffer, and the
        // finish copies the valid positions.
        const bool into_y = l.Wq == v.OW && c1 * TW <= l.grid;
        const int64_t ld = into_y ? OS : (c1 - c0) * TW;
        static thread_local std::vector<float> buf;
        if (!into_y) buf.resize(size_t((m1 - m0) * ld));
        float* out = into_y ? y + (n * s.M + gi * s.Mg + m0) * OS + c0 * TW : buf.data();
        for (int64_t t = c0; t < c1; ++t) {
          const float* b = src + t * TW;
          const int64_t* off = l.off.data();
          float* ot = out + (t - c0) * TW;
          for (int64_t k0 = 0; k0 < K; k0 += kstep) {
            const int64_t k1 = std::min(K, k0 + kstep);
            for (int64_t m = m0; m < m1; m += kern.rows) {
              const int64_t block = m / kPackRows, r = m % kPackRows;
              const int rows = int(std::min<int64_t>({kern.rows, m1 - m, kPackRows - r}));
              kern.tile(rows, k0, k1, b, off, wg + block * K * kPackRows + r, ot + (m - m0) * ld, ld, k0 > 0);
            }
          }
        }
        // Finish the chunk: the valid positions of each row of outputs, plus
        // bias and residual, through the activation, into Y.
        const int64_t p0 = c0 * TW, p1 = std::min(l.grid, c1 * TW);
        // (Epilogue::finish: the bias, then the residual, then the
        // activation, in one vectorized pass.)
        for (int64_t m = m0; m < m1; ++m) {
          const int64_t ch = n * s.M + gi * s.Mg + m;
          const float* bv = bias ? bias + gi * s.Mg + m : nullptr;
          if (into_y) {
            epi.finish(out + (m - m0) * ld, p1 - p0, bv, residual ? residual + ch * OS + p0 : nullptr);
            continue;
          }
          const float* om = out + (m - m0) * ld;
          for (int64_t oh = p0 / l.Wq; oh * l.Wq < p1; ++oh) {
            const int64_t j0 = std::max(p0 - oh * l.Wq, int64_t(0)), j1 = std::min(p1 - oh * l.Wq, v.OW);
            if (j0 >= j1) continue;
            float* yr = y + ch * OS + oh * v.OW;
            const float* o = om + oh * l.Wq - p0;
            epi.finish(yr + j0, j1 - j0, bv, residual ? residual + ch * OS + oh * v.OW + j0 : nullptr, o + j0);
          }
        }
      });
    }
}

}  // namespace kestrel::backends::cpu

// A depthwise convolution on channels-last tensors ([N, H, W, C] in and out,
// one input channel per output channel), for the depthwise layers of the
// CPU's channels-last chains (channels_last.h) on AVX-512 (nhwc_depthwise_for
// says which layers, and which build).
// oneDNN's kernel for them (brdgmm_dw in oneDNN 2.6) ran UltraFace's
// 16- and 32-channel 3x3 layers at 120x160 1.3x-1.7x slower than ONNX
// Runtime's blocked kernel on a Zen 4 core (BENCHMARKS.md), the largest
// share of where UltraFace and YOLOX-nano lost to it.
//
// On channels-last data a vector of channels at one position is one load,
// so a tile is T consecutive output positions of one output row x one
// vector of channels: T sums, the weights packed once ([vector block][tap]
// [width]). 3x3 and 5x5 windows at column stride 1 or 2 run a row at a
// time on tiles that load each input vector of a window's row once and
// multiply it by every tap that reads it, the tiles at the row's ends
// leaving out the padding's columns; other windows run a tile of one load
// a multiply-add, the edge positions with their columns of taps narrowed.
// Either way the padding is left out rather than read from a padded copy,
// the rows a window reaches found per output row. The bias starts the
// sums; Relu and Clip finish them in registers; a residual or another
// activation finishes each output row while it is in cache.
// tests/cpu_nhwc_depthwise_test.cpp checks it against a plain loop at each
// level.
#pragma once
#include <cstdint>
#include <vector>

#include "core/cpu_isa.h"
#include "ops/conv.h"
#include "ops/epilogue.h"

namespace kestrel::backends::cpu {

// One run of output positions of one row and one block of channels whose
// windows read the same rows of taps (ky0..ky1, end exclusive): position
// p's tap (ky, kx) reads the `width` channels at x + base + p * pos_step +
// ky * row_step + kx * col_step (base may be negative: only taps inside
// are formed); tap t's weights are at w + t * width, the sums start from
// bias[0 .. width) and go to y + p * ystep. Only the first `valid`
// channels of a block are read and written (a last block of fewer
// channels than a vector). Either a whole row of a window
// depthwise_row_tiles takes (whole_row: position 0's first tap reads
// input column in_col of in_width, the columns outside left out), or
// positions all of whose windows read the columns kx0..kx1 of taps.
struct DepthwiseRun {
  const float* x;
  int64_t base, pos_step, row_step, col_step;
  int ky0, ky1, kx0, kx1;
  bool whole_row;
  int64_t in_col, in_width;
  int64_t count;
  const float* w;
  const float* bias;
  float* y;
  int64_t ystep;
  int valid;
  // Relu and Clip in registers (max(lo, s) then min(hi, s), as ops/activation.h
  // rounds them, NaN kept), where `clamp`.
  bool clamp;
  float lo, hi;
};

// One instruction set's kernel (nhwc_depthwise_kernel.inc).
struct NhwcDepthwiseKernel {
  int width;  // channels a vector (and a packed block) holds
  // Kernels unrolled for 3x3 and 5x5 windows, any other through one loop.
  void (*run)(const DepthwiseRun& r, int KH, int KW);
};

// One level's kernel (AVX2 or AVX-512; null for the others).
const NhwcDepthwiseKernel* nhwc_depthwise_kernel(CpuIsa isa);

// The kernel a channels-last chain runs this layer on at this level, or
// null where it keeps oneDNN's: on AVX-512 this kernel (oneDNN 2.6's
// brdgmm_dw ran UltraFace's 16- and 32-channel layers 1.3x-1.7x slower),
// its AVX2 build where the channels fill whole 8-float vectors and not
// 16-float ones (BlazeFace's 24: two 16-float vectors carry a quarter of
// padding; measured 1.3x faster on a Zen 4 core); on AVX2 alone oneDNN's
// jit_dw:avx2, which ran the same layers 1.1x-1.3x faster than this
// kernel's AVX2 build there (measured on a Zen 4 core with both capped at
// AVX2); null on arm64 and below AVX2, and for layers not depthwise.
const NhwcDepthwiseKernel* nhwc_depthwise_for(const ops::ConvShape& s, CpuIsa isa = cpu_isa());

// Whether the kernels take whole rows of this window at once (3x3 and 5x5
// windows of undilated columns at column stride 1 or 2, the depthwise
// layers of the mobile networks): their tiles then share the loads of
// neighbouring taps and leave out the padding's columns themselves.
bool depthwise_row_tiles(int64_t KH, int64_t KW, int64_t SW, int64_t DW);

// Whether the layer is one these kernels take: 2-D, as many groups as input
// and output channels.
bool nhwc_depthwise_suits(const ops::ConvShape& s);

// W [C, 1, KH, KW] as the tiles read it ([block][tap][width], zeros past the
// last channel) and the bias (null: zeros) padded to whole blocks.
struct NhwcDepthwisePacked {
  int width = 0;
  std::vector<float> w, bias;
};
NhwcDepthwisePacked pack_nhwc_depthwise(const ops::ConvShape& s, int width, const float* w, const float* bias);

// Y [N, OH, OW, C] = depthwise conv(X [N, H, W, C]) + bias + residual (null:
// none; Y's shape), then the activation, on up to `threads` threads.
void nhwc_depthwise(int threads, const NhwcDepthwiseKernel& kernel, const ops::ConvShape& s, const float* x,
                    const NhwcDepthwisePacked& packed, const float* residual, const ops::Epilogue& epi, float* y);

namespace nhwc_depthwise_avx2 {
extern const NhwcDepthwiseKernel kernel;
}
namespace nhwc_depthwise_avx512 {
extern const NhwcDepthwiseKernel kernel;
}

}  // namespace kestrel::backends::cpu

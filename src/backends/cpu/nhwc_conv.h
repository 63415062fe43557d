// A direct convolution on channels-last tensors ([N, H, W, C] in and out),
// for the dense layers (one group; 1x1 windows only as nhwc_conv_suits says) of the CPU's
// channels-last chains (channels_last.h) on CPUs with AVX2 and no AVX-512.
// There oneDNN's kernel for this layout (jit:avx2 in oneDNN 2.6, written for
// its 8-channel blocked layout) ran M-LSD large's 128 -> 128 3x3 layers at
// 160x160 at 21 G multiply-adds a second on a Zen 3 core, and a dilated one
// fell to its im2col GEMM at 10, where ONNX Runtime's blocked kernels run 42.
//
// The form is an implicit GEMM: a register tile of kPositions consecutive
// output positions of one row x 16 output channels sums, for every tap of
// the window and every input channel, one broadcast input value times two
// vectors of packed weights (12 multiply-adds for 2 loads and 6
// broadcasts). The input is first copied with its padding as zeros, so
// every tap of every position reads inside it. The bias starts the sums; a
// fused residual and the activation finish each output row while it is in
// cache. tests/cpu_nhwc_conv_test.cpp checks it against the reference.
#pragma once
#include <cstdint>
#include <vector>

#include "core/cpu_isa.h"
#include "ops/conv.h"
#include "ops/epilogue.h"

namespace kestrel::backends::cpu {

// Output channels a packed block holds (two AVX2 vectors).
constexpr int kNhwcBlock = 16;

// One instruction set's register tile (nhwc_conv_kernel.inc).
struct NhwcConvKernel {
  int positions;  // output positions a tile computes at most
  // `count` (1 to positions) positions x kNhwcBlock channels: for each of
  // `taps` taps, position p's input run of C channels is at x + off[tap] +
  // p * xstep, the weights at w + tap * C * kNhwcBlock ([C][kNhwcBlock]);
  // sums start from bias[0 .. kNhwcBlock) and go to y + p * ystep.
  void (*tile)(int count, int64_t taps, const int64_t* off, int64_t C, const float* x, int64_t xstep,
               const float* w, const float* bias, float* y, int64_t ystep);
  // The same for the first `narrow_width` channels of a block alone (a last
  // block no wider: 28 channels are a block and 12, 40 two and 8), up to
  // `narrow_positions` positions a tile.
  int narrow_width, narrow_positions;
  void (*narrow_tile)(int count, int64_t taps, const int64_t* off, int64_t C, const float* x, int64_t xstep,
                      const float* w, const float* bias, float* y, int64_t ystep);
};

// The kernel for this CPU, or null where the channels-last chain keeps
// oneDNN's (AVX-512, arm64 and CPUs below AVX2).
const NhwcConvKernel* nhwc_conv_kernel(CpuIsa isa = cpu_isa());

// Whether the layer is one this kernel takes: 2-D, one group, at least 8
// input channels (below that oneDNN's kernel for a 3- or 4-channel stem is
// as fast), and a window wider than 1x1, or a 1x1 window adding a
// residual of output channels in no whole number of AVX2 vectors. oneDNN
// adds a residual only through its sum post-op, on a copy of the residual
// in the output, and its ragged last vector lost to the planar kernels
// (BlazeFace's 28-, 36- and 42-channel blocks), which kept such models out
// of the channels-last chains; other 1x1 layers run as fast on oneDNN's.
bool nhwc_conv_suits(const ops::ConvShape& s, bool residual);

// W [M, C, KH, KW] as the tiles read it: [block of kNhwcBlock output
// channels][tap][C][kNhwcBlock], zeros past the last channel; and the bias
// (null: zeros) padded to whole blocks.
struct NhwcPacked {
  std::vector<float> w, bias;
};
NhwcPacked pack_nhwc_conv(const ops::ConvShape& s, const float* w, const float* bias);

// Y [N, OH, OW, M] = conv(X [N, H, W, C]) + bias + residual (null: none;
// Y's shape), then the activation, on up to `threads` threads.
void nhwc_conv(int threads, const NhwcConvKernel& kernel, const ops::ConvShape& s, const float* x,
               const NhwcPacked& packed, const float* residual, const ops::Epilogue& epi, float* y);

namespace nhwc_conv_avx2 {
extern const NhwcConvKernel kernel;
}

}  // namespace kestrel::backends::cpu

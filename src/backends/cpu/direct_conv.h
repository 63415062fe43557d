// A direct float32 convolution for 1-D and 2-D windows (any kernel, stride,
// dilation and padding; groups of more than one channel), which reads the
// input where it lies instead of gathering each window into a column matrix
// (im2col) and packing that again for a GEMM. For the shapes real vision
// models are made of (few input channels, 1x1 at large maps, 3x3 with 16 to
// 128 channels) im2col + SGEMM spends more time moving data than
// multiplying; here each register tile of output channels x output
// positions sums its taps straight from a copy of the input padded with the
// zeros of the padding and split into stride phases (for stride s, s x s
// planes of every s-th row and column), so every tap of a run of outputs is
// a contiguous run of input: the outputs are computed on the phase planes'
// row width, and the few columns past the output's width are dropped.
// The bias, a fused residual Add and a fused activation are applied to each
// block of outputs while it is in cache. conv.cpp picks it by shape
// (direct_conv_suits); tests/cpu_direct_conv_test.cpp checks it against the
// reference at every instruction-set level.
#pragma once
#include <cstdint>
#include <vector>

#include "core/cpu_isa.h"
#include "ops/conv.h"
#include "ops/epilogue.h"

namespace kestrel::backends::cpu {

// Weights are packed for the tile in blocks of this many output channels:
// [block][tap][kPackRows], the same for every instruction set.
constexpr int kPackRows = 8;

// Convolutions of at most this many output positions (in a chunk) gather
// each window as a row for the narrow product (conv.cpp, narrow_gemm.h);
// direct_conv_suits leaves them to it.
constexpr int64_t kNarrowPositionsAtMost = 8;

// One instruction set's register tile (direct_conv_kernel.inc).
struct DirectConvKernel {
  int positions;  // output positions a tile computes (contiguous)
  int rows;       // output channels a tile computes at most
  void (*tile)(int rows, int64_t k0, int64_t k1, const float* b, const int64_t* off, const float* w, float* c,
               int64_t ldc, bool accumulate);
};

const DirectConvKernel& direct_conv_kernel(CpuIsa isa);

// Whether the direct convolution is the faster choice for this layer
// (depthwise layers have their own kernel and are not taken).
bool direct_conv_suits(const ops::ConvShape& s, CpuIsa isa = cpu_isa());

// W [M, K] (M output channels in `group` groups, K taps each) in the tiles'
// order: [group][block of kPackRows channels][tap][kPackRows], zero rows past
// a group's last channel.
std::vector<float> pack_direct_conv_weights(const float* w, int64_t M, int64_t group, int64_t K);

// Y = conv(X, W) + bias (may be null) + residual (may be null; Y's shape),
// then the activation; X, W and Y as the Conv op lays them out, `packed` W
// as pack_direct_conv_weights gives it (null: packed here). On up to
// `threads` OpenMP threads (one inside a parallel region).
void direct_conv(int threads, const ops::ConvShape& s, const float* x, const float* w, const float* packed,
                 const float* bias, const float* residual, const ops::Epilogue& epi, float* y, CpuIsa isa = cpu_isa());

namespace direct_conv_portable {
extern const DirectConvKernel kernel;
}
namespace direct_conv_avx2 {
extern const DirectConvKernel kernel;
}
namespace direct_conv_avx512 {
extern const DirectConvKernel kernel;
}

}  // namespace kestrel::backends::cpu

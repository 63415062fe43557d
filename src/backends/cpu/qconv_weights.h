// The weights of QLinearConv's and ConvInteger's packed product
// (qlinear_conv.cpp) in the order it reads them, made once: at load where the
// weights are an initializer (conv_weight_packing.h hands them to the node as
// two more inputs), else on each run. Built on every run, they cost more than
// the product on layers of many channels and small maps (UltraFace's
// 256 -> 256 1x1 on 8x10: 0.21 ms, where the float layer takes 0.10).
//
// The product takes the weights as s8 bytes w' = w - c (c = 128 for uint8
// weights, else 0): row m of a group holds output channel m's w', channel c
// and tap t at (c / 4 * taps + t) * 4 + c % 4, the rows padded to a multiple
// of 8 with zeros; where some channel's zero point is not c, one more row of
// ones after each group's channels gives the product each position's sum of
// the data (qlinear_conv.cpp's run_typed says why).
#pragma once
#include <cstdint>
#include <vector>

namespace kestrel::backends::cpu {

struct QConvWeights {
  std::vector<int8_t> rows;       // [group][rows8][k4 * 4]
  std::vector<int32_t> row_sums;  // [M]: sum over k of channel m's w'
};

// Whether some output channel's zero point differs from c (the row of ones).
bool qconv_needs_sums(const std::vector<int32_t>& wz, int32_t c);
// Depthwise layers (one input and one output channel per group) of up to
// 256 taps, whose exact sums float32 holds: they run on the float depthwise
// kernel, not on the product, so their weights are never packed.
inline bool qconv_depthwise_in_float(int64_t Cg, int64_t Mg, int64_t taps) { return Cg == 1 && Mg == 1 && taps <= 256; }
// Whether this CPU runs the packed product (and so wants its weights): x86-64
// from AVX2 on (AVX-512 VNNI's vpdpbusd or AVX2's int16 pairs), arm64 with
// the 8-bit dot product (SDOT); elsewhere the exact int32 convolution.
bool qconv_packed_product();
// A group's rows in the product: Mg (plus the row of ones), up to a multiple of 8.
inline int64_t qconv_rows8(int64_t Mg, bool sums) { return (Mg + (sums ? 1 : 0) + 7) / 8 * 8; }

// w: the weights as stored, [M][Cg * taps]; wz: one zero point per output
// channel; c: 128 for uint8 weights, else 0.
QConvWeights pack_qconv_weights(const std::vector<int32_t>& w, const std::vector<int32_t>& wz, int64_t M, int64_t group,
                                int64_t Cg, int64_t taps, int32_t c);

}  // namespace kestrel::backends::cpu

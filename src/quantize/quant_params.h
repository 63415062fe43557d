// The arithmetic of static quantization, as ONNX Runtime's quantization tool
// does it: activations to uint8 with a zero point (the range widened to hold
// 0, so zero padding and ReLU's zeros are exact), weights to int8 symmetric
// in [-127, 127] (zero point 0), per tensor or per output channel.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace kestrel::quantize {

struct Range {
  float lo = 0, hi = 0;
};

// uint8 scale and zero point for values in r: scale = (hi - lo) / 255 over
// the range widened to hold 0; a range of only zeros gets scale 1.
struct ActivationParams {
  float scale = 1;
  uint8_t zero_point = 0;
};
ActivationParams activation_params(Range r);

// A weight quantized to int8: one scale per channel along `axis` (or one in
// all when axis < 0), scale = max |w| / limit, q = clamp(round_half_even(w /
// scale), -limit, limit). The full range is limit 127; kReducedRange (64,
// ONNX Runtime's reduce_range) keeps every product of a uint8 activation
// and a pair of weights within 16 bits (255 * 64 * 2 < 32768), which ONNX
// Runtime's products need to be exact on x86 CPUs without VNNI.
constexpr int kFullRange = 127, kReducedRange = 64;
struct QuantizedWeight {
  Tensor q;                   // int8, w's shape
  std::vector<float> scales;  // one per channel, or one
  int axis = -1;
};
QuantizedWeight quantize_weight(const Tensor& w, int axis, int limit = kFullRange);

// A MatMul's weight W [K, N] in 4-bit blocks as com.microsoft MatMulNBits
// holds it (ops/matmul_nbits.h): each column's K values in blocks of
// `block`, symmetric, scale = max |w| / 7 per block (0 where the block is
// all zero), q = clamp(round_half_even(w / scale), -7, 7) + 8, two a byte
// from the low bits up, a short last block padded with 8 (zero); no zero
// points (MatMulNBits then takes 8).
struct Int4Blocks {
  Tensor packed;              // uint8 [N, blocks, block / 2]
  std::vector<float> scales;  // [N * blocks]
};
Int4Blocks quantize_int4_blocks(const Tensor& w, int64_t block);

// The range holding all but `tail` of the values at each end (0.0001: the
// 99.99th percentile), from a sample of them; the sample is reordered.
Range percentile_range(std::vector<float>& sample, double tail);

// The range that keeps the most information once quantized (TensorRT's
// entropy calibration): a histogram of |x| in 2048 bins; each candidate
// threshold t folds the values beyond it into its last bin, and the one whose
// histogram loses least to rounding into `levels` bins (KL divergence) wins.
// levels: 256 for a tensor with no negative values (all of uint8 holds
// [0, t]), else 128 (half of it holds [0, t]). The result is [-t, t] cut to
// the values' own [min, max].
Range entropy_range(const std::vector<float>& sample, Range minmax);

}  // namespace kestrel::quantize

// QuantizeLinear's per-tensor arithmetic on 8 bits, for kernels that end in a
// quantizer (a QLinearConv carrying a fused activation): q = saturate(
// round_half_even(x / scale) + zero_point), the bits of the op itself, on
// one thread at the CPU's widest level (ops/quantize.cpp).
#pragma once
#include <cstdint>

#include "ops/registry.h"

namespace kestrel::ops {

void quantize_floats(const float* x, float scale, int32_t zero_point, uint8_t* q, int64_t n);
void quantize_floats(const float* x, float scale, int32_t zero_point, int8_t* q, int64_t n);
// DequantizeLinear's per-tensor arithmetic on 8 bits, the bits of the op:
// x = (q - zero_point) * scale.
void dequantize_bytes(const uint8_t* q, float scale, int32_t zero_point, float* x, int64_t n);
void dequantize_bytes(const int8_t* q, float scale, int32_t zero_point, float* x, int64_t n);

// DynamicQuantizeLinear's arithmetic, for kernels that quantize their input
// as the op does (com.microsoft DynamicQuantizeMatMul): x's range widened to
// hold 0, scale (hi - lo) / 255, the zero point and the uint8 values q, the
// bits of the op (and of ONNX Runtime's).
struct DynamicQuantized {
  float scale = 0;
  uint8_t zero_point = 0;
};
DynamicQuantized dynamic_quantize(const KernelContext& ctx, const float* x, int64_t n, uint8_t* q);

}  // namespace kestrel::ops

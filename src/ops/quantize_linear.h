// QuantizeLinear's per-tensor arithmetic on 8 bits, for kernels that end in a
// quantizer (a QLinearConv carrying a fused activation): q = saturate(
// round_half_even(x / scale) + zero_point), the bits of the op itself, on
// one thread at the CPU's widest level (ops/quantize.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "ops/registry.h"

namespace kestrel::ops {

// Which scale and zero-point value element i of QuantizeLinear's or
// DequantizeLinear's x uses: one for the tensor, one per index along
// `axis`, or one per block of `block` indices along it (opset 21). Every
// backend reads the attributes through quant_param_map.
struct QuantParamMap {
  int64_t inner = 1;   // elements after the axis
  int64_t dim = 1;     // x's size along the axis
  int64_t block = 0;   // 0: per axis (or per tensor when count == 1)
  int64_t count = 1;   // parameter values along the axis
  bool per_tensor() const { return count == 1 && block == 0; }
  int64_t at(int64_t i) const {
    if (per_tensor()) return 0;
    int64_t a = (i / inner) % dim;
    if (block == 0) return a;
    int64_t outer = i / (inner * dim), in = i % inner;
    return (outer * count + a / block) * inner + in;
  }
};
// The map for x and scale of these shapes and the node's `axis` and
// `block_size` attributes; `error` says why they do not fit (else empty).
QuantParamMap quant_param_map(const Shape& x, const Shape& scale, int64_t axis, int64_t block, std::string& error);
// "" when a zero point of this shape goes with the scale, else why not.
std::string zero_point_shape_error(const Shape& scale, const Shape& zero_point);

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

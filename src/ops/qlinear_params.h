// The scale and zero point of one 8-bit tensor of ONNX Runtime's quantized
// contrib ops (QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
// QLinearConcat, QLinearGlobalAveragePool), each one value, and the table
// that ops mapping one byte to one byte go through: each of the 256 values
// dequantized as DequantizeLinear does, x_scale * (x - x_zero_point), passed
// through a float function, and quantized as QuantizeLinear does, as ONNX
// Runtime's CPU EP builds its lookup tables.
#pragma once
#include <array>
#include <cstdint>

#include "ops/common.h"
#include "ops/quantize_linear.h"
#include "ops/requantize.h"

namespace kestrel::ops {

struct QParam {
  float scale = 1;
  int32_t zero_point = 0;
};

// Inputs scale_at and zp_at (optional: zero) of a tensor of type `type`
// (uint8 or int8), named `what` in errors.
inline QParam qparam(const KernelContext& ctx, int scale_at, int zp_at, DType type, const char* what) {
  if (type != DType::UInt8 && type != DType::Int8)
    ctx.fail(what, " must be uint8 or int8, got ", dtype_name(type));
  QParam p;
  p.scale = read_scales(ctx, scale_at, 1, (std::string(what) + " scale").c_str())[0];
  if (zp_at >= 0 && ctx.has_input(zp_at)) {
    const Tensor& z = ctx.input(zp_at);
    if (z.dtype() != type || z.numel() != 1)
      ctx.fail(what, " zero point must be one ", dtype_name(type), ", got ", dtype_name(z.dtype()), " ",
               shape_str(z.shape()));
    p.zero_point = int32_t(z.to_i64()[0]);
  }
  return p;
}

// The table of byte b (the stored bits of a uint8 or int8 value) for
// f(float in[256], float out[256]).
template <typename F>
std::array<uint8_t, 256> qlinear_table(DType type, QParam x, QParam y, F&& f) {
  float in[256], out[256];
  for (int b = 0; b < 256; ++b) {
    const int32_t v = type == DType::Int8 ? int32_t(int8_t(uint8_t(b))) : b;
    in[b] = x.scale * float(v - x.zero_point);
  }
  f(in, out);
  std::array<uint8_t, 256> table;
  if (type == DType::Int8)
    quantize_floats(out, y.scale, y.zero_point, reinterpret_cast<int8_t*>(table.data()), 256);
  else
    quantize_floats(out, y.scale, y.zero_point, table.data(), 256);
  return table;
}

// y[i] = table[x[i]] over n bytes.
inline void apply_table(const std::array<uint8_t, 256>& table, const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

}  // namespace kestrel::ops

// The scale and zero point of one 8-bit tensor of ONNX Runtime's quantized
// contrib ops (QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
// QLinearConcat, QLinearGlobalAveragePool), each one value, and the table
// that ops mapping one byte to one byte go through: each of the 256 values
// dequantized as DequantizeLinear does, x_scale * (x - x_zero_point), passed
// through a float function, and quantized as QuantizeLinear does, as ONNX
// Runtime's CPU EP builds its lookup tables.
#pragma once
#include <algorithm>
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

// Reads the scale and zero point (null: zero) of an 8-bit tensor of type
// `type`, named `what` in errors: "" and p set, or what is wrong. Every
// backend's kernels of these ops read them with it.
inline std::string read_qparam(const Tensor& scale, const Tensor* zp, DType type, const std::string& what, QParam& p) {
  if (type != DType::UInt8 && type != DType::Int8) return what + " must be uint8 or int8, got " + dtype_name(type);
  if (std::string e = scale_error(scale, 1, (what + " scale").c_str()); !e.empty()) return e;
  p.scale = scale.to_f32()[0];
  p.zero_point = 0;
  if (zp) {
    if (zp->dtype() != type || zp->numel() != 1)
      return what + " zero point must be one " + dtype_name(type) + ", got " + dtype_name(zp->dtype()) + " " +
             shape_str(zp->shape());
    p.zero_point = int32_t(zp->to_i64()[0]);
  }
  return "";
}

// Inputs scale_at and zp_at (optional: zero) of a tensor of type `type`.
inline QParam qparam(const KernelContext& ctx, int scale_at, int zp_at, DType type, const char* what) {
  QParam p;
  const Tensor* zp = zp_at >= 0 && ctx.has_input(zp_at) ? &ctx.input(zp_at) : nullptr;
  if (std::string e = read_qparam(ctx.input(scale_at), zp, type, what, p); !e.empty()) ctx.fail(e);
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

// The table that requantizes a byte from x's scale and zero point to y's
// (QLinearConcat), and whether it is the identity (equal parameters: ONNX
// Runtime copies the bytes).
inline std::array<uint8_t, 256> qlinear_requant_table(DType type, QParam x, QParam y) {
  return qlinear_table(type, x, y, [](const float* in, float* out) { std::copy(in, in + 256, out); });
}
inline bool same_qparam(QParam x, QParam y) { return x.scale == y.scale && x.zero_point == y.zero_point; }

// y[i] = table[x[i]] over n bytes.
inline void apply_table(const std::array<uint8_t, 256>& table, const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

}  // namespace kestrel::ops

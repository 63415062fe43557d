// Requantization shared by QLinearConv and QLinearMatMul: exact int32
// accumulators are scaled by in_scale * w_scale / out_scale (computed in
// float, as ONNX Runtime does), rounded half to even, offset by the output
// zero point and saturated to the 8-bit output type.
#pragma once
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/common.h"

namespace kestrel::ops {

template <typename Q>
inline Q requantize(int32_t acc, float multiplier, int32_t zero_point) {
  double r = double(std::nearbyint(float(acc) * multiplier)) + double(zero_point);
  r = std::clamp(r, double(std::numeric_limits<Q>::lowest()), double(std::numeric_limits<Q>::max()));
  return Q(r);
}

// What is wrong with a float scale input meant to hold one value or
// `count` values (one per output channel, row or column), or "" where it
// is fine. Every backend's quantized products check with it.
inline std::string scale_error(const Tensor& t, int64_t count, const char* what) {
  if (!dtype_is_float(t.dtype())) return std::string(what) + " must be float, got " + dtype_name(t.dtype());
  if (t.numel() != 1 && (t.rank() != 1 || t.numel() != count))
    return std::string(what) + " has shape " + shape_str(t.shape()) + " but must be a scalar or hold " +
           std::to_string(count) + " values (one per output channel)";
  return "";
}

// Reads a float scale input holding one value or `count` values; fails
// naming the input otherwise.
inline std::vector<float> read_scales(const KernelContext& ctx, int i, int64_t count, const char* what) {
  const Tensor& t = ctx.input(i);
  if (std::string e = scale_error(t, count, what); !e.empty()) ctx.fail(e);
  return t.to_f32();
}

// The requantization multipliers in_scale * w_scale / out_scale of a
// product whose rows have `a` scales (one, or one per row: `rows` of them)
// and whose columns have `b` scales (one, or one per column), computed in
// float in that order, as ONNX Runtime computes them. Entry (r, c) of an
// output matrix (element r * cols + c) takes values[at(r * cols + c)]: one
// value, one per column, one per row or one per (row, column).
struct RequantMultipliers {
  std::vector<float> values;
  int64_t inner = 1, dim = 0;  // element i of an M x N matrix takes values[dim ? (i / inner) % dim : 0]
  int64_t at(int64_t i) const { return dim ? (i / inner) % dim : 0; }
};
inline RequantMultipliers requant_multipliers(const std::vector<float>& a, const std::vector<float>& b, float out_scale,
                                              int64_t rows, int64_t cols) {
  RequantMultipliers m;
  const bool per_row = a.size() > 1, per_col = b.size() > 1;
  const int64_t nr = per_row ? rows : 1, nc = per_col ? cols : 1;
  m.values.resize(size_t(nr * nc));
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t c = 0; c < nc; ++c) m.values[size_t(r * nc + c)] = a[size_t(r)] * b[size_t(c)] / out_scale;
  if (per_row && per_col) m.inner = 1, m.dim = rows * cols;
  else if (per_col) m.inner = 1, m.dim = cols;
  else if (per_row) m.inner = cols, m.dim = rows;
  return m;
}

// Calls f(Q*) for the 8-bit output type `t`.
template <typename F>
void dispatch_q8(const KernelContext& ctx, DType t, F&& f) {
  if (t == DType::UInt8) return f(static_cast<uint8_t*>(nullptr));
  if (t == DType::Int8) return f(static_cast<int8_t*>(nullptr));
  ctx.fail("quantized output type must be uint8 or int8, got ", dtype_name(t));
}

// Writes q[i] = requantize(acc[i]) where element i uses multiplier
// mult[mult.size() == 1 ? 0 : channel_of(i)].
template <typename ChannelOf>
void requantize_into(KernelContext& ctx, const Tensor& acc, const std::vector<float>& mult, int32_t zp, Tensor& out,
                     ChannelOf channel_of) {
  const int32_t* a = acc.data<int32_t>();
  dispatch_q8(ctx, out.dtype(), [&](auto* tag) {
    using Q = std::remove_pointer_t<decltype(tag)>;
    Q* q = out.data<Q>();
    const bool single = mult.size() == 1;
    parallel_for(ctx, acc.numel(), 1 << 14, [&](int64_t i) {
      q[i] = requantize<Q>(a[i], mult[single ? 0 : size_t(channel_of(i))], zp);
    });
  });
}

}  // namespace kestrel::ops

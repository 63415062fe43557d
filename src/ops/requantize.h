// Requantization shared by QLinearConv and QLinearMatMul: exact int32
// accumulators are scaled by in_scale * w_scale / out_scale (computed in
// float, as ONNX Runtime does), rounded half to even, offset by the output
// zero point and saturated to the 8-bit output type.
#pragma once
#include <cmath>
#include <limits>
#include <vector>

#include "ops/common.h"

namespace kestrel::ops {

template <typename Q>
inline Q requantize(int32_t acc, float multiplier, int32_t zero_point) {
  double r = double(std::nearbyint(float(acc) * multiplier)) + double(zero_point);
  r = std::clamp(r, double(std::numeric_limits<Q>::lowest()), double(std::numeric_limits<Q>::max()));
  return Q(r);
}

// Reads a float scale input holding one value or `count` values (one per
// output channel / column); fails naming the input otherwise.
inline std::vector<float> read_scales(const KernelContext& ctx, int i, int64_t count, const char* what) {
  const Tensor& t = ctx.input(i);
  if (!dtype_is_float(t.dtype())) ctx.fail(what, " must be float, got ", dtype_name(t.dtype()));
  if (t.numel() != 1 && (t.rank() != 1 || t.numel() != count))
    ctx.fail(what, " has shape ", shape_str(t.shape()), " but must be a scalar or hold ", count,
             " values (one per output channel)");
  return t.to_f32();
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

// The quantized ops' parameters read on the host, and QLinearMatMul's and
// QLinearConv's requantization on the device (shaders/requantize.comp): the
// exact int32 sums their integer kernels wrote into scratch, plus a
// per-channel int32 bias, scaled by the multipliers the CPU computes
// (ops/requantize.h), into packed 8-bit outputs with the reference's bits.
#pragma once
#include "backends/vulkan/ops/util.h"
#include "ops/qlinear_params.h"
#include "ops/requantize.h"

namespace kestrel::vulkan {

// Scale input `at` (on the host), one value or `count`, checked as the CPU
// checks it.
inline std::vector<float> host_scales(OpContext& ctx, int at, int64_t count, const char* what) {
  const Tensor& t = ctx.host_input(at);
  if (std::string e = ops::scale_error(t, count, what); !e.empty()) ctx.fail(e);
  return t.to_f32();
}

// The scale (input scale_at) and zero point (zp_at, optional) of an 8-bit
// tensor of type `type`, one value each, on the host, checked as the CPU
// checks them (com.microsoft QLinearAdd, QLinearSigmoid...).
inline ops::QParam host_qparam(OpContext& ctx, int scale_at, int zp_at, DType type, const char* what) {
  ops::QParam p;
  const Tensor* zp = ctx.has_input(zp_at) ? &ctx.host_input(zp_at) : nullptr;
  if (std::string e = ops::read_qparam(ctx.host_input(scale_at), zp, type, what, p); !e.empty()) ctx.fail(e);
  return p;
}

// Y's zero point (input `at`, on the host: one value, as the reference
// requires) and Y's type, which it sets (`default_type` without one).
inline int32_t output_zero_point(OpContext& ctx, int at, DType& out_type, DType default_type) {
  out_type = default_type;
  if (!ctx.has_input(at)) return 0;
  const Tensor& z = ctx.host_input(at);
  if (z.numel() != 1) ctx.fail("y_zero_point must be a scalar, got ", shape_str(z.shape()));
  out_type = z.dtype();
  if (out_type != DType::UInt8 && out_type != DType::Int8)
    ctx.fail("quantized output type must be uint8 or int8, got ", dtype_name(out_type));
  return int32_t(z.to_i64()[0]);
}

// Y (8-bit, packed) from `acc` (Y.numel() int32 sums): sum i plus
// bias[(i / b_inner) % b_dim] (b_dim 0: no bias), times mult.at(i) (over
// the whole output: a product's batches repeat its matrices' pattern, whose
// period inner * dim divides the matrix). With an activation `act`, mult
// holds in_scale * w_scale (the sums' real scale) and the activated values
// are quantized by out_scale, as ops/conv.cpp quantizes a QLinearConv
// carrying one.
inline void record_requantize(OpContext& ctx, const GpuTensor& acc, const ops::RequantMultipliers& mult,
                              const GpuTensor* bias, int64_t b_inner, int64_t b_dim, int32_t zero_point,
                              const GpuTensor& Y, ActParams act = {}, float out_scale = 1) {
  const GpuTensor m = ctx.upload_f32(mult.values);  // float32: the node is a float32_node
  struct {
    uint32_t base, n, count, m_inner, m_dim, b_inner, b_dim;
    int32_t zero_point;
    float out_scale, act_a, act_b;
  } p{0, 0, uint32_t(Y.numel()), uint32_t(mult.inner), uint32_t(mult.dim), uint32_t(std::max<int64_t>(b_inner, 1)),
      uint32_t(bias ? b_dim : 0), zero_point, out_scale, act.a, act.b};
  ctx.dispatch_elements("requantize", {Y.dtype == DType::Int8, int32_t(act.act)},
                        {In(acc), In(m), In(bias ? *bias : acc), Out(Y)}, &p, sizeof p, (uint64_t(Y.numel()) + 3) / 4);
}

}  // namespace kestrel::vulkan

// QuantizeLinear, DequantizeLinear (per tensor, per axis, per block) and
// DynamicQuantizeLinear. Rounding is half-to-even and results saturate to the
// integer type's range, as ONNX specifies.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/cpu_isa.h"
#include "core/cpu_isa_target.h"
#if KESTREL_X86
#include <immintrin.h>
#endif
#include "ops/common.h"
#include "ops/quantize_linear.h"

namespace kestrel::ops {
namespace {

QuantParamMap param_map(const KernelContext& ctx, const Tensor& x, const Tensor& scale) {
  std::string error;
  QuantParamMap m = quant_param_map(x.shape(), scale.shape(), ctx.node.attr_i("axis", 1), ctx.node.attr_i("block_size", 0),
                                    error);
  if (!error.empty()) ctx.fail(error);
  return m;
}

template <typename Q>
Q saturate_round(float v) {
  if (v != v) return Q(0);  // NaN: 0, as the per-tensor loops give (converting it would be undefined)
  double r = std::nearbyint(double(v));  // the default rounding mode: half to even
  r = std::clamp(r, double(std::numeric_limits<Q>::lowest()), double(std::numeric_limits<Q>::max()));
  return Q(r);
}

template <typename F>
void dispatch_quant(const KernelContext& ctx, DType t, F&& f) {
  switch (t) {
    case DType::Int8: case DType::Int4: f(static_cast<int8_t*>(nullptr)); break;  // 4 bits: one value a byte
    case DType::UInt8: case DType::UInt4: f(static_cast<uint8_t*>(nullptr)); break;
    case DType::Int16: f(static_cast<int16_t*>(nullptr)); break;
    case DType::UInt16: f(static_cast<uint16_t*>(nullptr)); break;
    case DType::Int32: f(static_cast<int32_t*>(nullptr)); break;
    default: ctx.fail("quantized type ", dtype_name(t), " is not supported");
  }
}

void check_zero_point(const KernelContext& ctx, const Tensor& scale, const Tensor& zp) {
  if (std::string error = zero_point_shape_error(scale.shape(), zp.shape()); !error.empty()) ctx.fail(error);
}

}  // namespace

QuantParamMap quant_param_map(const Shape& x, const Shape& scale, int64_t axis_attr, int64_t block,
                              std::string& error) {
  QuantParamMap m;
  error.clear();
  if (shape_numel(scale) == 1 && scale.size() <= 1 && block == 0) return m;
  const int64_t rank = int64_t(x.size());
  if (axis_attr < -rank || axis_attr >= std::max<int64_t>(rank, 1)) {
    error = "axis " + std::to_string(axis_attr) + " is out of range for rank " + std::to_string(rank);
    return m;
  }
  const size_t axis = size_t(axis_attr < 0 ? axis_attr + rank : axis_attr);
  m.dim = x[axis];
  for (size_t i = axis + 1; i < x.size(); ++i) m.inner *= x[i];
  if (block > 0) {
    // Blocked (opset 21): scale has x's shape with the axis divided into blocks.
    Shape want = x;
    want[axis] = (m.dim + block - 1) / block;
    if (scale != want)
      error = "scale has shape " + shape_str(scale) + "; block_size " + std::to_string(block) + " on axis " +
              std::to_string(axis) + " of x " + shape_str(x) + " needs " + shape_str(want);
    m.block = block;
    m.count = want[axis];
    return m;
  }
  if (scale.size() != 1 || scale[0] != m.dim)
    error = "per-axis scale has shape " + shape_str(scale) + " but x " + shape_str(x) + " has " +
            std::to_string(m.dim) + " entries along axis " + std::to_string(axis);
  m.count = m.dim;
  return m;
}

std::string zero_point_shape_error(const Shape& scale, const Shape& zero_point) {
  if (zero_point == scale) return "";
  return "zero point shape " + shape_str(zero_point) + " differs from scale shape " + shape_str(scale);
}

// The per-tensor 8-bit loops, at the baseline and for AVX2: at the
// baseline's 4-wide SSE2 (its division and the saturating conversion)
// QuantizeLinear was a third of a QDQ YOLOX-nano's time.
namespace baseline_isa {
#include "ops/quantize_kernels.inc"
}  // namespace baseline_isa
KESTREL_ISA_AVX2_BEGIN
namespace avx2_isa {
#if KESTREL_X86
// quantize_block's bits eight values at a time (ops/quantize_lanes.inc).
#include "ops/quantize_lanes.inc"
template <bool kUnsigned, typename Q>
void quantize_intrinsics(const float* in, float scale, float zp, Q* q, int64_t n) {
  const QuantizeLanes<kUnsigned> lanes(scale, zp);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), lanes(_mm256_loadu_ps(in + i)));
  if (i < n) {  // the last 1 to 7 through a buffer
    alignas(32) float tail[8] = {};
    alignas(16) Q out[16];
    for (int64_t j = i; j < n; ++j) tail[j - i] = in[j];
    _mm_store_si128(reinterpret_cast<__m128i*>(out), lanes(_mm256_load_ps(tail)));
    for (int64_t j = i; j < n; ++j) q[j] = out[j - i];
  }
}
// dequantize_block's bits sixteen bytes at a time (ops/quantize_lanes.inc).
template <typename Q>
void dequantize_intrinsics(const Q* in, float scale, float zp, float* out, int64_t n) {
  const DequantizeLanes<Q> eight(scale, int32_t(zp));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, eight(b));
    _mm256_storeu_ps(out + i + 8, eight(_mm_srli_si128(b, 8)));
  }
  for (; i < n; ++i) out[i] = (float(in[i]) - zp) * scale;
}
#define KESTREL_QUANTIZE_INTRINSICS 1
#endif
#include "ops/quantize_kernels.inc"
#undef KESTREL_QUANTIZE_INTRINSICS
}  // namespace avx2_isa
KESTREL_ISA_END

namespace {

constexpr int64_t kQuantBlock = 1 << 14;  // elements a task takes

// f (a level's loop, picked once) over x's n elements in blocks, on the
// session's threads.
template <typename In, typename Out>
void per_tensor_blocks(const KernelContext& ctx, void (*baseline)(const In*, float, float, Out*, int64_t),
                       void (*avx2)(const In*, float, float, Out*, int64_t), const In* x, float scale, float zp,
                       Out* out, int64_t n) {
  const auto f = cpu_isa() >= CpuIsa::Avx2 ? avx2 : baseline;
  parallel_for(ctx, (n + kQuantBlock - 1) / kQuantBlock, 1, [&](int64_t b) {
    f(x + b * kQuantBlock, scale, zp, out + b * kQuantBlock, std::min(kQuantBlock, n - b * kQuantBlock));
  });
}

void quantize_per_tensor(const KernelContext& ctx, const float* x, float scale, float zp, uint8_t* out, int64_t n) {
  per_tensor_blocks(ctx, baseline_isa::quantize_u8, avx2_isa::quantize_u8, x, scale, zp, out, n);
}
void quantize_per_tensor(const KernelContext& ctx, const float* x, float scale, float zp, int8_t* out, int64_t n) {
  per_tensor_blocks(ctx, baseline_isa::quantize_s8, avx2_isa::quantize_s8, x, scale, zp, out, n);
}
void dequantize_per_tensor(const KernelContext& ctx, const uint8_t* x, float scale, float zp, float* out, int64_t n) {
  per_tensor_blocks(ctx, baseline_isa::dequantize_u8, avx2_isa::dequantize_u8, x, scale, zp, out, n);
}
void dequantize_per_tensor(const KernelContext& ctx, const int8_t* x, float scale, float zp, float* out, int64_t n) {
  per_tensor_blocks(ctx, baseline_isa::dequantize_s8, avx2_isa::dequantize_s8, x, scale, zp, out, n);
}

}  // namespace

void quantize_floats(const float* x, float scale, int32_t zero_point, uint8_t* q, int64_t n) {
  (cpu_isa() >= CpuIsa::Avx2 ? avx2_isa::quantize_u8 : baseline_isa::quantize_u8)(x, scale, float(zero_point), q, n);
}
void quantize_floats(const float* x, float scale, int32_t zero_point, int8_t* q, int64_t n) {
  (cpu_isa() >= CpuIsa::Avx2 ? avx2_isa::quantize_s8 : baseline_isa::quantize_s8)(x, scale, float(zero_point), q, n);
}
void dequantize_bytes(const uint8_t* q, float scale, int32_t zero_point, float* x, int64_t n) {
  (cpu_isa() >= CpuIsa::Avx2 ? avx2_isa::dequantize_u8 : baseline_isa::dequantize_u8)(q, scale, float(zero_point), x, n);
}
void dequantize_bytes(const int8_t* q, float scale, int32_t zero_point, float* x, int64_t n) {
  (cpu_isa() >= CpuIsa::Avx2 ? avx2_isa::dequantize_s8 : baseline_isa::dequantize_s8)(q, scale, float(zero_point), x, n);
}

namespace {

void run_quantize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  QuantParamMap m = param_map(ctx, x, scale);
  DType qt = DType::UInt8;
  if (ctx.has_input(2)) {
    check_zero_point(ctx, scale, ctx.input(2));
    qt = ctx.input(2).dtype();
  } else if (int64_t od = ctx.node.attr_i("output_dtype", 0)) {
    qt = DType(od);
  }
  if (x.dtype() == DType::Float32 && scale.numel() == 1 && m.count == 1 && m.block == 0 &&
      (qt == DType::UInt8 || qt == DType::Int8)) {
    const float s = scale.to_f32()[0];
    const float z = ctx.has_input(2) ? float(ctx.input(2).to_i64()[0]) : 0.0f;
    Tensor& y = ctx.output(0, qt, x.shape());
    if (qt == DType::UInt8)
      quantize_per_tensor(ctx, x.data<float>(), s, z, y.data<uint8_t>(), x.numel());
    else
      quantize_per_tensor(ctx, x.data<float>(), s, z, y.data<int8_t>(), x.numel());
    return;
  }
  std::vector<float> xs = x.to_f32(), sc = scale.to_f32();
  std::vector<int64_t> zp = ctx.has_input(2) ? ctx.input(2).to_i64() : std::vector<int64_t>(sc.size(), 0);
  Tensor& y = ctx.output(0, qt, x.shape());
  const bool four = qt == DType::Int4 || qt == DType::UInt4;  // saturated to 4 bits, held one a byte
  dispatch_quant(ctx, qt, [&](auto* tag) {
    using Q = std::remove_pointer_t<decltype(tag)>;
    Q* out = y.data<Q>();
    parallel_for(ctx, x.numel(), 1 << 16, [&](int64_t i) {
      int64_t p = m.at(i);
      out[i] = saturate_round<Q>(float(std::nearbyint(xs[size_t(i)] / sc[size_t(p)]) + double(zp[size_t(p)])));
      if (four) out[i] = Q(std::clamp<int32_t>(out[i], dtype_4bit_lowest(qt), dtype_4bit_max(qt)));
    });
  });
}

void run_dequantize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  QuantParamMap m = param_map(ctx, x, scale);
  if (ctx.has_input(2)) {
    check_zero_point(ctx, scale, ctx.input(2));
    if (ctx.input(2).dtype() != x.dtype())
      ctx.fail("zero point type ", dtype_name(ctx.input(2).dtype()), " differs from x type ", dtype_name(x.dtype()));
  }
  std::vector<float> sc = scale.to_f32();
  std::vector<int64_t> zp = ctx.has_input(2) ? ctx.input(2).to_i64() : std::vector<int64_t>(sc.size(), 0);
  Tensor& y = ctx.output(0, DType::Float32, x.shape());
  float* out = y.data<float>();
  if (sc.size() == 1 && m.count == 1 && m.block == 0 && (x.dtype() == DType::UInt8 || x.dtype() == DType::Int8)) {
    // Per tensor from 8 bits (a QDQ model's activations), vectorized.
    if (x.dtype() == DType::UInt8)
      dequantize_per_tensor(ctx, x.data<uint8_t>(), sc[0], float(zp[0]), out, x.numel());
    else
      dequantize_per_tensor(ctx, x.data<int8_t>(), sc[0], float(zp[0]), out, x.numel());
    return;
  }
  dispatch_quant(ctx, x.dtype(), [&](auto* tag) {
    using Q = std::remove_pointer_t<decltype(tag)>;
    const Q* in = x.data<Q>();
    parallel_for(ctx, x.numel(), 1 << 16, [&](int64_t i) {
      int64_t p = m.at(i);
      out[i] = float(double(int64_t(in[i]) - zp[size_t(p)]) * sc[size_t(p)]);
    });
  });
}

// The smallest and largest of x and 0. Blocks on the session's threads,
// each with 16 running minima and maxima the compiler vectorizes; like
// std::min/std::max from 0, each takes a value only when it is strictly
// beyond, so NaNs are skipped and a -0 never replaces the starting 0: the
// result is what one pass in order gives.
std::pair<float, float> range_with_zero(const KernelContext& ctx, const float* x, int64_t n) {
  constexpr int64_t kBlock = 1 << 16, kLanes = 16;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<float> los(size_t(blocks), 0.f), his(size_t(blocks), 0.f);
  parallel_for(ctx, blocks, 1, [&](int64_t b) {
    const int64_t begin = b * kBlock, end = std::min(n, begin + kBlock);
    // Running minima and maxima in four 4-float vectors each (GCC's vector
    // extension: minps/maxps at the baseline, NEON on arm64; as a plain array
    // of 16 GCC kept each lane in a scalar register, and as one 16-float
    // vector it spilled, either way making this pass cost more than the GEMM
    // after it). A NaN leaves a lane as it was: v < lo is false.
    typedef float V4 __attribute__((vector_size(16)));
    V4 lo[4] = {}, hi[4] = {};
    int64_t i = begin;
    for (; i + kLanes <= end; i += kLanes)
      for (int j = 0; j < 4; ++j) {
        V4 v;
        std::memcpy(&v, x + i + 4 * j, sizeof v);
        lo[j] = v < lo[j] ? v : lo[j];
        hi[j] = v > hi[j] ? v : hi[j];
      }
    float l = 0, h = 0;
    for (; i < end; ++i) l = std::min(l, x[i]), h = std::max(h, x[i]);
    for (int j = 0; j < 4; ++j)
      for (int e = 0; e < 4; ++e) l = std::min(l, lo[j][e]), h = std::max(h, hi[j][e]);
    los[size_t(b)] = l, his[size_t(b)] = h;
  });
  float lo = 0, hi = 0;
  for (int64_t b = 0; b < blocks; ++b) lo = std::min(lo, los[size_t(b)]), hi = std::max(hi, his[size_t(b)]);
  return {lo, hi};
}

void run_dynamic_quantize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::Float32) ctx.fail("x must be float, got ", dtype_name(x.dtype()));
  Tensor& y = ctx.output(0, DType::UInt8, x.shape());
  const DynamicQuantized q = dynamic_quantize(ctx, x.data<float>(), x.numel(), y.data<uint8_t>());
  ctx.set_output(1, Tensor::scalar_f32(q.scale));
  Tensor& z = ctx.output(2, DType::UInt8, {});
  *z.data<uint8_t>() = q.zero_point;
}

}  // namespace

DynamicQuantized dynamic_quantize(const KernelContext& ctx, const float* x, int64_t n, uint8_t* q) {
  // The range always includes 0 so that 0 is exactly representable.
  const auto [lo, hi] = range_with_zero(ctx, x, n);
  const float scale = (hi - lo) / 255.0f;
  const uint8_t zp = scale == 0 ? 0 : saturate_round<uint8_t>(0.0f - lo / scale);
  // round(x / scale) + zp, saturated: quantize_per_tensor's vector loop.
  if (scale == 0)
    std::fill_n(q, n, zp);
  else
    quantize_per_tensor(ctx, x, scale, float(zp), q, n);
  return {scale, zp};
}

KESTREL_OP(QuantizeLinear, {.min_opset = 10, .run = run_quantize});
KESTREL_OP(DequantizeLinear, {.min_opset = 10, .run = run_dequantize});
KESTREL_OP(DynamicQuantizeLinear, {.min_opset = 11, .run = run_dynamic_quantize});

}  // namespace kestrel::ops

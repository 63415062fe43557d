// The CPU backend's QdqAdd (ops/qdq_add.cpp: two 8-bit tensors dequantized,
// added, the activation, quantized): eight values at a time through all four
// steps in registers, with the reference's bits (each step's arithmetic as
// the reference's vectorized loops have it: (q - zero_point) in int32
// converted and times the scale, the float sum, Relu or Clip as
// activate() has them, ops/quantize_lanes.inc). The reference takes each
// step as a pass over a block of floats in memory, five passes where this
// is one: a quantized BlazeFace's residual sums took a third of its run.
// Other activations, and CPUs below AVX2, run the reference.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "backends/cpu/fast_kernels.h"
#include "core/cpu_isa.h"
#include "core/cpu_isa_target.h"
#include "ops/common.h"
#include "ops/epilogue.h"
#if KESTREL_X86
#include <immintrin.h>
#endif

namespace kestrel::backends::cpu {

#if KESTREL_X86
KESTREL_ISA_AVX2_BEGIN
namespace avx2_isa {
namespace {
#include "ops/quantize_lanes.inc"
}  // namespace

// y = quantize(act(dequantize(a) + dequantize(b))) over n values; act is
// None, Relu or Clip [lo, hi]: max(lo, x) then min(hi, x) with the operands
// in the order that lets a NaN through, as activate() does (Relu: lo = 0,
// hi = +inf).
template <typename Q, typename Y>
void qdq_add(const Q* a, float as, int32_t az, const Q* b, float bs, int32_t bz, bool clamp, float lo, float hi,
             float ys, int32_t yz, Y* y, int64_t n) {
  const DequantizeLanes<Q> da(as, az), db(bs, bz);
  const QuantizeLanes<std::is_same_v<Y, uint8_t>> quantize(ys, float(yz));
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  // |q - zero_point| <= 255 on either side: where the sum and the Clip's
  // bounds stay well inside the output's range of steps, the quantizer
  // needs none of its clamps (ops/quantize_lanes.inc).
  double most = 255.0 * (std::fabs(double(as)) + std::fabs(double(bs)));
  if (clamp) most = std::max({most, std::isinf(lo) ? 0.0 : std::fabs(double(lo)), std::isinf(hi) ? 0.0 : std::fabs(double(hi))});
  const bool bounded = std::isfinite(most) && quantize.bounded_below(most);
  const auto eight = [&](const Q* pa, const Q* pb) {
    __m256 v = _mm256_add_ps(da(pa), db(pb));
    if (clamp) v = _mm256_min_ps(vhi, _mm256_max_ps(vlo, v));
    return bounded ? quantize.bounded(v) : quantize(v);
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), eight(a + i, b + i));
  if (i < n) {  // the last 1 to 7 through buffers
    alignas(16) Q ta[8] = {}, tb[8] = {};
    alignas(16) Y out[16];
    std::copy(a + i, a + n, ta);
    std::copy(b + i, b + n, tb);
    _mm_store_si128(reinterpret_cast<__m128i*>(out), eight(ta, tb));
    std::copy(out, out + (n - i), y + i);
  }
}

}  // namespace avx2_isa
KESTREL_ISA_END
#endif

namespace {

constexpr int64_t kTask = 1 << 14;  // values a task takes

template <typename Q, typename Y>
void run_typed(ops::KernelContext& ctx, bool clamp, float lo, float hi, Tensor& y) {
#if KESTREL_X86
  const Tensor &a = ctx.input(0), &b = ctx.input(3);
  const float as = ctx.input(1).to_f32()[0], bs = ctx.input(4).to_f32()[0], ys = ctx.input(6).to_f32()[0];
  const int32_t az = int32_t(ctx.input(2).to_i64()[0]), bz = int32_t(ctx.input(5).to_i64()[0]);
  const int32_t yz = int32_t(ctx.input(7).to_i64()[0]);
  const int64_t n = y.numel();
  ops::parallel_for(ctx, (n + kTask - 1) / kTask, 1, [&](int64_t t) {
    const int64_t at = t * kTask, m = std::min(kTask, n - at);
    avx2_isa::qdq_add(a.data<Q>() + at, as, az, b.data<Q>() + at, bs, bz, clamp, lo, hi, ys, yz, y.data<Y>() + at, m);
  });
#else
  (void)ctx, (void)clamp, (void)lo, (void)hi, (void)y;
#endif
}

void run_qdq_add(ops::KernelContext& ctx) {
  const ops::Epilogue epi = ops::Epilogue::of(ctx.node);
  using ops::Activation;
  const bool fused = epi.kind == Activation::None || epi.kind == Activation::Relu || epi.kind == Activation::Clip;
  if (!KESTREL_X86 || cpu_isa() < CpuIsa::Avx2 || !fused || ctx.num_inputs() != 8) return run_reference_kernel(ctx);
  const Tensor &a = ctx.input(0), &b = ctx.input(3);
  // The forms the reference checks and names, one value each, are left to it.
  for (int at : {1, 2, 4, 5, 6, 7})
    if (ctx.input(at).numel() != 1) return run_reference_kernel(ctx);
  const DType q = a.dtype(), yt = ctx.input(7).dtype();
  if (a.shape() != b.shape() || b.dtype() != q || ctx.input(2).dtype() != q || ctx.input(5).dtype() != q ||
      (q != DType::UInt8 && q != DType::Int8) || (yt != DType::UInt8 && yt != DType::Int8) ||
      ctx.input(1).dtype() != DType::Float32 || ctx.input(4).dtype() != DType::Float32 ||
      ctx.input(6).dtype() != DType::Float32)
    return run_reference_kernel(ctx);
  const bool clamp = epi.kind != Activation::None;
  const float lo = epi.kind == Activation::Clip ? epi.a : 0.f;
  const float hi = epi.kind == Activation::Clip ? epi.b : std::numeric_limits<float>::infinity();
  if (!(lo <= hi)) return run_reference_kernel(ctx);  // (a Clip whose bounds cross: the reference's order)
  Tensor& y = ctx.output(0, yt, a.shape());
  if (y.numel() == 0) return;
  if (q == DType::UInt8) {
    if (yt == DType::UInt8) run_typed<uint8_t, uint8_t>(ctx, clamp, lo, hi, y);
    else run_typed<uint8_t, int8_t>(ctx, clamp, lo, hi, y);
  } else {
    if (yt == DType::UInt8) run_typed<int8_t, uint8_t>(ctx, clamp, lo, hi, y);
    else run_typed<int8_t, int8_t>(ctx, clamp, lo, hi, y);
  }
}

}  // namespace

KESTREL_CPU_KERNEL(QdqAdd, {.domain = "com.kestrel", .run = run_qdq_add});

}  // namespace kestrel::backends::cpu

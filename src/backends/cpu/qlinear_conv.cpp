// The CPU backend's QLinearConv and ConvInteger on 8-bit data as it is
// stored, for the 2-D convolutions quantized models are made of (the QDQ form
// becomes QLinearConv at load, passes/fuse_qdq_conv.cpp; dynamically
// quantized models run ConvInteger):
//   - depthwise (one input and one output channel per group) of up to 256
//     taps: the float convolution's depthwise kernel on x - zx and w - zw,
//     exactly;
//   - the rest, on x86-64 from AVX2 on and on arm64 with the dot product:
//     chunks of output positions gathered as the data's bytes and multiplied
//     by the weights' on vpdpbusd where the CPU has AVX-512 VNNI, else on
//     int16 pairs, or on SDOT (qconv_kernels.h), exact in int32, zero points
//     of any value (run_typed says how);
// each finished row then takes its bias and is requantized as ONNX Runtime
// does (ops/requantize.h) or written as int32 (ConvInteger), so nothing of
// the size of the output is held in int32 or float beside it. Other shapes
// and CPUs take the general exact convolution (conv_int32.h).
#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cpu/conv_depthwise.h"
#include "backends/cpu/conv_int32.h"
#include "backends/cpu/qlinear_conv.h"
#include "backends/cpu/conv_weight_packing.h"
#include "backends/cpu/qconv_kernels.h"
#include "backends/cpu/qconv_weights.h"
#include "core/cpu_isa.h"
#include "ops/conv.h"
#include "ops/conv_util.h"
#include "ops/epilogue.h"
#include "ops/quantize_linear.h"
#include "ops/requantize.h"

namespace kestrel::backends::cpu {

namespace {

using namespace ops;

// Budget in bytes for a chunk's packed activations and int32 sums: keeps
// them in L2 while the chunk is multiplied and requantized.
constexpr int64_t kChunkBytes = 1 << 18;
// Pixels of one channel quad a packing task takes (pack_quads).
constexpr int64_t kPackPixels = 1 << 13;

const Tensor* optional(const KernelContext& ctx, int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

// Everything a chunk needs, read once per run.
struct QConv {
  ConvShape s;
  int32_t xzp = 0, yzp = 0;
  bool x_u8 = true, w_u8 = false;
  std::vector<int32_t> w;     // the weights as stored, [M, Cg * KH * KW] (empty where packed at load)
  const int8_t* packed_rows = nullptr;    // the product's weights packed at load (qconv_weights.h), or null
  const int32_t* packed_sums = nullptr;   // and their row sums
  std::vector<int32_t> wz;    // their zero point, one per output channel
  std::vector<int32_t> bias;  // one per output channel (zero without B)
  std::vector<float> mult;    // x_scale * w_scale / y_scale, one per output channel (QLinearConv)
  // A fused activation (QLinearConv from the QDQ fusion, ops/conv.cpp says
  // how the reference applies it): each sum times real[m] = x_scale *
  // w_scale, the activation, then QuantizeLinear by y_scale.
  Epilogue epi;
  std::vector<float> real;
  float ys = 1;
  bool avx2 = cpu_isa() >= CpuIsa::Avx2;  // requantize on qconv_kernels.h's AVX2 loop
  bool avx512 = cpu_avx512_vnni();        // ... on its AVX-512 one, and the product on VNNI
  int64_t K() const { return s.Cg * s.g.kernel_size(); }
  int32_t wd(int64_t m, int64_t k) const { return w[size_t(m * K() + k)] - wz[size_t(m)]; }
};

// Depthwise layers whose exact sums float32 holds (run_typed).
bool depthwise_in_float(const ConvShape& s) { return qconv_depthwise_in_float(s.Cg, s.Mg, s.g.kernel_size()); }

bool eight_bit(DType t) { return t == DType::UInt8 || t == DType::Int8; }

// X, W and their zero points (inputs x, w, xz, wz) into q; false where the
// kernels here do not take them.
bool read_operands(const KernelContext& ctx, int x, int w, int xz, int wz, QConv& q) {
  const Tensor& X = ctx.input(x);
  const Tensor& Wt = ctx.input(w);
  q.s = conv_shape(ctx, X, Wt);
  if (q.s.g.nd != 2 || !eight_bit(X.dtype()) || !eight_bit(Wt.dtype())) return false;
  const Tensor* xzt = optional(ctx, xz);
  const Tensor* wzt = optional(ctx, wz);
  if (xzt && (xzt->numel() != 1 || xzt->dtype() != X.dtype())) return false;
  if (wzt && ((wzt->numel() != 1 && wzt->numel() != q.s.M) || wzt->dtype() != Wt.dtype())) return false;
  q.x_u8 = X.dtype() == DType::UInt8;
  q.w_u8 = Wt.dtype() == DType::UInt8;
  q.xzp = xzt ? int32_t(xzt->to_i64()[0]) : 0;
  if (ctx.node.has(kPackedWeightsAttr) && !depthwise_in_float(q.s)) {
    const int at = int(ctx.node.attr_i(kPackedWeightsAttr, 0));
    q.packed_rows = ctx.input(at).data<int8_t>();
    q.packed_sums = ctx.input(at + 1).data<int32_t>();
  } else {
    const std::vector<int64_t> wv = Wt.to_i64();
    q.w.assign(wv.begin(), wv.end());
  }
  const std::vector<int64_t> wzv = wzt ? wzt->to_i64() : std::vector<int64_t>{0};
  q.wz.resize(size_t(q.s.M));
  for (int64_t m = 0; m < q.s.M; ++m) q.wz[size_t(m)] = int32_t(wzv[wzv.size() == 1 ? 0 : size_t(m)]);
  q.bias.assign(size_t(q.s.M), 0);
  return true;
}

bool read_qlinear_conv(const KernelContext& ctx, QConv& q) {
  if (!read_operands(ctx, 0, 3, 2, 5, q)) return false;
  const Tensor* yz = optional(ctx, 7);
  if (yz && yz->numel() != 1) return false;
  q.yzp = yz ? int32_t(yz->to_i64()[0]) : 0;
  const std::vector<float> xs = read_scales(ctx, 1, 1, "x_scale"), ws = read_scales(ctx, 4, q.s.M, "w_scale"),
                           ys = read_scales(ctx, 6, 1, "y_scale");
  q.mult.resize(size_t(q.s.M));
  q.real.resize(size_t(q.s.M));
  for (int64_t m = 0; m < q.s.M; ++m) {
    q.real[size_t(m)] = xs[0] * ws[ws.size() == 1 ? 0 : size_t(m)];
    q.mult[size_t(m)] = q.real[size_t(m)] / ys[0];
  }
  q.ys = ys[0];
  q.epi = Epilogue::of(ctx.node);
  if (const Tensor* B = optional(ctx, 8)) {
    if (B->dtype() != DType::Int32 || B->numel() != q.s.M)
      ctx.fail("bias ", dtype_name(B->dtype()), " ", shape_str(B->shape()), " must hold one int32 per output channel (",
               q.s.M, ")");
    std::memcpy(q.bias.data(), B->data<int32_t>(), size_t(q.s.M) * 4);
  }
  return true;
}

// The AVX2 loops of qconv_kernels.h, or AVX-512's, by output type; callers
// check QConv::avx2 (false wherever they are not built), and QConv::avx512
// picks the wider.
#if KESTREL_X86
void requantize_fast(bool avx512, const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zp, uint8_t* y) {
  (avx512 ? qconv_avx512::requantize_u8 : qconv_avx2::requantize_u8)(acc, n, bias, mult, zp, y);
}
void requantize_fast(bool avx512, const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zp, int8_t* y) {
  (avx512 ? qconv_avx512::requantize_s8 : qconv_avx2::requantize_s8)(acc, n, bias, mult, zp, y);
}
void requantize_fast(bool avx512, const float* sums, int64_t n, float bias, float mult, int32_t zp, uint8_t* y) {
  (avx512 ? qconv_avx512::requantize_exact_floats_u8 : qconv_avx2::requantize_exact_floats_u8)(sums, n, bias, mult, zp,
                                                                                               y);
}
void requantize_fast(bool avx512, const float* sums, int64_t n, float bias, float mult, int32_t zp, int8_t* y) {
  (avx512 ? qconv_avx512::requantize_exact_floats_s8 : qconv_avx2::requantize_exact_floats_s8)(sums, n, bias, mult, zp,
                                                                                               y);
}
#else
template <typename S, typename B, typename Q>
void requantize_fast(bool, const S*, int64_t, B, float, int32_t, Q*) {}
#endif

// Output channel m's fused activation as qconv_kernels.h's activated rows
// take it, into a; false for the activations those leave to the passes
// below (and wherever the rows are not built).
bool activated_rows(const QConv& q, int64_t m, QConvActivate& a) {
  if (!KESTREL_X86 || !q.avx2) return false;
  switch (q.epi.kind) {
    case Activation::Relu: a.kind = QConvActivation::Relu; break;
    case Activation::Clip: a.kind = QConvActivation::Clip; break;
    case Activation::LeakyRelu: a.kind = QConvActivation::LeakyRelu; break;
    case Activation::Sigmoid: a.kind = QConvActivation::Sigmoid; break;
    case Activation::Silu: a.kind = QConvActivation::Silu; break;
    default: return false;
  }
  a.a = q.epi.a;
  a.b = q.epi.b;
  a.real = q.real[size_t(m)];
  a.scale = q.ys;
  a.zero_point = q.yzp;
  return true;
}
#if KESTREL_X86
template <typename Q>
void activate_fast(bool avx512, const QConvActivate& a, const int32_t* acc, int64_t n, int32_t bias, Q* y) {
  if (avx512) return qconv_avx512::activate_requantize(a, acc, n, bias, y);
  qconv_avx2::activate_requantize(a, acc, n, bias, y);
}
template <typename Q>
void activate_fast(bool avx512, const QConvActivate& a, const float* sums, int64_t n, float bias, Q* y) {
  if (avx512) return qconv_avx512::activate_requantize_floats(a, sums, n, bias, y);
  qconv_avx2::activate_requantize_floats(a, sums, n, bias, y);
}
#else
template <typename S, typename B, typename Q>
void activate_fast(bool, const QConvActivate&, const S*, int64_t, B, Q*) {}
#endif

// Where a finished row of sums goes: requantized into QLinearConv's 8-bit
// output (ops::requantize<Q>, on AVX2 where the CPU has it), or as they are
// into ConvInteger's int32 one. Each sum takes `bias` first (the int32 sum
// wraps as the reference's does). row() takes int32 sums; float_row() sums
// that float32 holds exactly (below 2^24 in magnitude: the depthwise layers
// run in float), which it may overwrite.
template <typename Q>
struct Requantized {
  Q* y;
  // Whether the VNNI product may requantize its blocks itself instead
  // (QConvRequant): no activation comes between the sum and the quantizer.
  bool into_product(const QConv& q) const { return q.epi.kind == Activation::None; }
  QConvRequant requant(const QConv& q, const int32_t* bias, int64_t m, int64_t rows, int64_t at, int64_t ldy) const {
    return {.bias = bias + m, .mult = q.mult.data() + m, .zero_point = q.yzp, .y_signed = std::is_same_v<Q, int8_t>,
            .y = y + at, .ldy = ldy, .rows = rows};
  }
  void row(const QConv& q, int64_t m, int32_t bias, const int32_t* acc, int64_t n, int64_t at) const {
    const float mult = q.mult[size_t(m)];
    Q* out = y + at;
    if (q.epi.kind != Activation::None) {
      if (QConvActivate a; activated_rows(q, m, a)) return activate_fast(q.avx512, a, acc, n, bias, out);
      static thread_local std::vector<float> real;
      real.resize(size_t(n));
      const float r = q.real[size_t(m)];
      for (int64_t i = 0; i < n; ++i) real[size_t(i)] = float(int32_t(uint32_t(acc[i]) + uint32_t(bias))) * r;
      q.epi.apply(real.data(), n);
      return quantize_floats(real.data(), q.ys, q.yzp, out, n);
    }
    if (q.avx2) return requantize_fast(q.avx512, acc, n, bias, mult, q.yzp, out);
    for (int64_t i = 0; i < n; ++i) out[i] = requantize<Q>(int32_t(uint32_t(acc[i]) + uint32_t(bias)), mult, q.yzp);
  }
  void float_row(const QConv& q, int64_t m, int32_t bias, float* sums, int64_t n, int64_t at) const {
    if (bias <= -(1 << 24) || bias >= (1 << 24)) {  // float(bias) would round: through int32
      static thread_local std::vector<int32_t> acc;
      acc.resize(size_t(n));
      for (int64_t i = 0; i < n; ++i) acc[size_t(i)] = int32_t(sums[i]);
      return row(q, m, bias, acc.data(), n, at);
    }
    // sum + bias in float is the one rounding of the exact value, as
    // float(int32 sum + bias) is (below 2^25: no int32 wrap).
    const float b = float(bias);
    Q* out = y + at;
    if (q.epi.kind != Activation::None) {
      if (QConvActivate a; activated_rows(q, m, a)) return activate_fast(q.avx512, a, sums, n, b, out);
      const float r = q.real[size_t(m)];
      for (int64_t i = 0; i < n; ++i) sums[i] = (sums[i] + b) * r;
      q.epi.apply(sums, n);
      return quantize_floats(sums, q.ys, q.yzp, out, n);
    }
    if (q.avx2) return requantize_fast(q.avx512, sums, n, b, q.mult[size_t(m)], q.yzp, out);
    for (int64_t i = 0; i < n; ++i) out[i] = requantize<Q>(int32_t(sums[i] + b), q.mult[size_t(m)], q.yzp);
  }
};

struct Sums {
  int32_t* y;
  bool into_product(const QConv&) const { return false; }
  QConvRequant requant(const QConv&, const int32_t*, int64_t, int64_t, int64_t, int64_t) const { return {}; }
  void row(const QConv&, int64_t, int32_t bias, const int32_t* acc, int64_t n, int64_t at) const {
    for (int64_t i = 0; i < n; ++i) y[at + i] = int32_t(uint32_t(acc[i]) + uint32_t(bias));
  }
  void float_row(const QConv&, int64_t, int32_t bias, const float* sums, int64_t n, int64_t at) const {
    for (int64_t i = 0; i < n; ++i) y[at + i] = int32_t(uint32_t(int32_t(sums[i])) + uint32_t(bias));
  }
};

// One group of one image as the product reads it: channels in quads, each
// pixel's four bytes one 32-bit word, [ceil(Cg / 4)][H * W] words; x as u8
// (int8 data shifted by 128), the channels past Cg `pad`. This call writes
// quad c4's pixels p0 .. p1. (Called only from AVX2 on, or on arm64 with the
// dot product.)
#if KESTREL_PACKED_QCONV
template <typename X>
void pack_quads(const QConv& q, const X* x, uint8_t pad, int64_t c4, int64_t p0, int64_t p1, uint32_t* P) {
  const int64_t HW = q.s.g.in_size();
  const uint8_t flip = std::is_same_v<X, uint8_t> ? 0 : 128;
  const uint8_t* planes[4];
  for (int64_t j = 0; j < 4; ++j) {
    const int64_t c = c4 * 4 + j;
    planes[j] = c < q.s.Cg ? reinterpret_cast<const uint8_t*>(x + c * HW + p0) : nullptr;
  }
#if KESTREL_X86
  qconv_avx2::interleave_quads(planes, p1 - p0, flip, pad, P + c4 * HW + p0);
#else
  qconv_neon::interleave_quads(planes, p1 - p0, flip, pad, P + c4 * HW + p0);
#endif
}

// The product's u8 operand for output positions o0 .. o1: [K4][o1 - o0]
// words, k4 = (channel quad, kh, kw), from pack_quads' layout; `pad` (four
// bytes of the zero point) where the window leaves the image.
void gather_quads(const QConv& q, const uint32_t* P, int64_t o0, int64_t o1, uint32_t pad, uint32_t* U) {
  const Window2D w(q.s.g);
  const int64_t n = o1 - o0, C4 = (q.s.Cg + 3) / 4;
  for (int64_t c4 = 0; c4 < C4; ++c4)
    for (int64_t kh = 0; kh < w.KH; ++kh)
      for (int64_t kw = 0; kw < w.KW; ++kw) {
        uint32_t* out = U + ((c4 * w.KH + kh) * w.KW + kw) * n - o0;  // position o at out[o]
        const uint32_t* plane = P + c4 * w.H * w.W;
        // Row by row of the output: the columns whose input is inside the
        // image are copied, the rest are padding.
        for (int64_t o = o0; o < o1;) {
          const int64_t ow0 = o % w.OW, base = o - ow0, end = std::min(o1, base + w.OW);
          const int64_t ih = (o / w.OW) * w.SH - w.PH + kh * w.DH, off = kw * w.DW - w.PW;
          if (ih < 0 || ih >= w.H) {
            for (; o < end; ++o) out[o] = pad;
            continue;
          }
          const uint32_t* row = plane + ih * w.W;
          const int64_t lo = off >= 0 ? 0 : (-off + w.SW - 1) / w.SW;
          const int64_t hi = std::max(lo, std::min(w.OW, w.W - off <= 0 ? 0 : (w.W - off + w.SW - 1) / w.SW));
          for (; o < end && o - base < lo; ++o) out[o] = pad;
          const int64_t mid = std::min(end, base + hi);
          if (w.SW == 1 && mid > o) {
            std::memcpy(out + o, row + (o - base) + off, size_t(mid - o) * 4);
            o = mid;
          }
          for (; o < mid; ++o) out[o] = row[(o - base) * w.SW + off];
          for (; o < end; ++o) out[o] = pad;
        }
      }
}

#endif  // KESTREL_PACKED_QCONV

// acc[i] += scale * (sums[i] - offset), wrapping as int32 does.
void add_scaled(int32_t* acc, const int32_t* sums, int64_t n, int32_t scale, int32_t offset) {
#if KESTREL_X86
  qconv_avx2::add_scaled(acc, sums, n, scale, offset);
#else
  for (int64_t i = 0; i < n; ++i)
    acc[i] = int32_t(uint32_t(acc[i]) + uint32_t(scale) * (uint32_t(sums[i]) - uint32_t(offset)));
#endif
}

template <typename X, typename Sink>
void run_typed(KernelContext& ctx, const QConv& q, const X* x, const Sink& sink) {
  const ConvShape& s = q.s;
  const int64_t IS = s.g.in_size(), OS = s.g.out_size();
  if (depthwise_in_float(s)) {
    // In float on the float convolution's depthwise kernel, exactly: every
    // product is an integer of at most 255 * 255, and every partial sum of at
    // most 256 of them stays below 2^24. (Direct int32 taps ran 3x slower
    // than this on BlazeFace's 24-channel 128x128 layers.)
    const int64_t taps = s.g.kernel_size();
    parallel_for(ctx, s.N * s.M, 1, [&](int64_t t) {
      static thread_local std::vector<float> xf, yf;
      const int64_t m = t % s.M;
      yf.resize(size_t(OS));
      const X* plane = x + t * IS;
      float wf[256];
      for (int64_t k = 0; k < taps; ++k) wf[k] = float(q.wd(m, k));
      // x - zx exactly, converted a row at a time as the kernel copies the
      // plane; other windows through DequantizeLinear's loop at scale 1.
      if (!depthwise_plane_bytes(s.g, plane, q.xzp, wf, yf.data())) {
        xf.resize(size_t(IS));
        dequantize_bytes(plane, 1.0f, q.xzp, xf.data(), IS);
        depthwise_plane(s.g, xf.data(), wf, 0.f, yf.data());
      }
      sink.float_row(q, m, q.bias[size_t(m)], yf.data(), OS, t * OS);
    });
    return;
  }
#if KESTREL_PACKED_QCONV
  // The product takes the data as u8 bytes U = x (int8 data: x + 128), so
  // x - zx = U - zx' with zx' = zx (+ 128); and the weights as s8 bytes
  // w' = w - c (c = 128 for uint8 weights, else 0), so w - zw = w' + cw
  // with cw = c - zw per output channel. Then
  //   sum (x - zx)(w - zw) = sum U w' - zx' sum w' + cw (sum U - K zx'):
  // the second term moves into each channel's bias, and where some cw is not
  // zero one more row of ones in the product gives each position's sum U.
  const Window2D w2(s.g);
  const int64_t K = q.K(), KHW = w2.KH * w2.KW, C4 = (s.Cg + 3) / 4, K4 = C4 * KHW;
  const int32_t zx = q.xzp + (q.x_u8 ? 0 : 128), c = q.w_u8 ? 128 : 0;
  const bool sums = qconv_needs_sums(q.wz, c);
  const int64_t M8 = qconv_rows8(s.Mg, sums);
  QConvWeights built;  // where the weights were not packed at load
  if (!q.packed_rows) built = pack_qconv_weights(q.w, q.wz, s.M, s.group, s.Cg, KHW, c);
  const int8_t* S = q.packed_rows ? q.packed_rows : built.rows.data();
  const int32_t* row_sums = q.packed_sums ? q.packed_sums : built.row_sums.data();
  std::vector<int32_t> bias(size_t(s.M));
  for (int64_t m = 0; m < s.M; ++m)  // exact modulo 2^32
    bias[size_t(m)] = int32_t(uint32_t(int64_t(q.bias[size_t(m)]) - int64_t(zx) * row_sums[size_t(m)]));
  // Every group of every image in quads of channels, once, in tasks of up to
  // kPackPixels pixels of one quad (a task an image left one thread packing
  // alone: 2 threads, QDQ UltraFace 1.54 -> 1.52 ms, BlazeFace back 3.50 ->
  // 3.44).
  std::vector<uint32_t> packed(size_t(s.N * s.group * C4 * IS));
  const int64_t pieces = (IS + kPackPixels - 1) / kPackPixels;
  parallel_for(ctx, s.N * s.group * C4 * pieces, 1, [&](int64_t t) {
    const int64_t ng = t / (C4 * pieces), c4 = t / pieces % C4, p0 = t % pieces * kPackPixels;
    const int64_t n = ng / s.group, gi = ng % s.group;
    pack_quads(q, x + (n * s.C + gi * s.Cg) * IS, uint8_t(zx), c4, p0, std::min(IS, p0 + kPackPixels),
               packed.data() + ng * C4 * IS);
  });
  const uint32_t pad_word = uint32_t(uint8_t(zx)) * 0x01010101u;
  // vpdpbusd on AVX-512 VNNI; int16 pairs on AVX2 alone (a quarter of the
  // products an instruction, and still 6x to 10x the exact float product
  // this path replaced there: BENCHMARKS.md), the weights widened once a
  // run; on arm64 SDOT, the weights arranged in blocks of rows once a run.
#if KESTREL_X86
  const bool vnni = q.avx512;
  std::vector<int32_t> wide;
  if (!vnni) {
    wide.resize(size_t(s.group * M8 * K4 * 2));
    qconv_avx2::widen_pairs(S, s.group * M8 * K4, wide.data());
  }
#else
  std::vector<int8_t> arranged(size_t(s.group * M8 * K4 * 4));
  std::vector<int32_t> fix(size_t(s.group * M8));
  for (int64_t gi = 0; gi < s.group; ++gi)
    qconv_neon::arrange_rows(S + gi * M8 * K4 * 4, M8, K4, arranged.data() + gi * M8 * K4 * 4, fix.data() + gi * M8);
#endif
  bool pointwise = KHW == 1;
  for (int d = 0; d < 2; ++d)
    pointwise = pointwise && s.g.stride[size_t(d)] == 1 && s.g.pad_begin[size_t(d)] == 0 && s.g.pad_end[size_t(d)] == 0;
  // On VNNI, an output of nothing but requantized sums (no activation, no
  // per-channel sums to add) is written by the product itself.
#if KESTREL_X86
  const bool in_product = vnni && !sums && sink.into_product(q);
#endif
  const int64_t per_thread = (OS + ctx.threads() - 1) / ctx.threads();
  const int64_t chunk = std::min(OS, std::max<int64_t>(32, std::min(kChunkBytes / (K4 * 4 + M8 * 4), per_thread)));
  const int64_t nchunks = (OS + chunk - 1) / chunk;
  parallel_for(ctx, s.N * s.group * nchunks, 1, [&](int64_t t) {
    static thread_local std::vector<uint32_t> U;
    static thread_local std::vector<int32_t> acc;
    const int64_t ng = t / nchunks, o0 = (t % nchunks) * chunk, o1 = std::min(OS, o0 + chunk), nc = o1 - o0;
    const int64_t n = ng / s.group, gi = ng % s.group;
    acc.resize(size_t(M8 * nc));
    // A 1x1 window at stride 1 without padding reads the packed planes as
    // they are; other windows gather their columns first.
    const uint32_t* cols = packed.data() + ng * C4 * IS + o0;
    int64_t ldu = IS;
    if (!pointwise) {
      U.resize(size_t(K4 * nc));
      gather_quads(q, packed.data() + ng * C4 * IS, o0, o1, pad_word, U.data());
      cols = U.data();
      ldu = nc;
    }
    const uint8_t* u8 = reinterpret_cast<const uint8_t*>(cols);
#if KESTREL_X86
    if (in_product) {  // requantized as the blocks leave the registers: no int32 rows
      qconv_avx512::igemm_u8s8_requantized(M8, nc, K4, u8, ldu, S + gi * M8 * K4 * 4,
                                           sink.requant(q, bias.data(), gi * s.Mg, s.Mg, (n * s.M + gi * s.Mg) * OS + o0, OS));
      return;
    }
    if (vnni)
      qconv_avx512::igemm_u8s8_packed(M8, nc, K4, u8, ldu, S + gi * M8 * K4 * 4, acc.data(), nc);
    else
      qconv_avx2::igemm_u8s8_pairs(M8, nc, K4, u8, ldu, wide.data() + gi * M8 * K4 * 2, acc.data(), nc);
#else
    qconv_neon::igemm_u8s8_dot(M8, nc, K4, u8, ldu, arranged.data() + gi * M8 * K4 * 4, fix.data() + gi * M8,
                               acc.data(), nc);
#endif
    const int32_t* col_sums = acc.data() + s.Mg * nc;  // sum U per position (the row of ones)
    for (int64_t m = 0; m < s.Mg; ++m) {
      const int64_t mo = gi * s.Mg + m;
      int32_t* row = acc.data() + m * nc;
      if (sums && q.wz[size_t(mo)] != c)
        add_scaled(row, col_sums, nc, c - q.wz[size_t(mo)], int32_t(uint32_t(K) * uint32_t(zx)));
      sink.row(q, mo, bias[size_t(mo)], row, nc, (n * s.M + mo) * OS + o0);
    }
  });
#endif  // (kernel_takes: the rest only on x86-64 from AVX2 on and arm64's dot product)
}

// Whether the kernels here take this convolution: depthwise layers of up to
// 256 taps always; the rest (depthwise beyond too, as groups of one channel)
// where the packed product runs (qconv_packed_product()).
bool kernel_takes(const QConv& q) { return depthwise_in_float(q.s) || qconv_packed_product(); }

template <typename Sink>
void run_sink(KernelContext& ctx, const QConv& q, const Tensor& X, const Sink& sink) {
  if (X.dtype() == DType::UInt8)
    run_typed(ctx, q, X.data<uint8_t>(), sink);
  else
    run_typed(ctx, q, X.data<int8_t>(), sink);
}

}  // namespace

void run_qlinear_conv_8bit(KernelContext& ctx) {
  QConv q;
  const Tensor& X = ctx.input(0);
  if (!read_qlinear_conv(ctx, q) || !kernel_takes(q)) return run_qlinear_conv_with(ctx, conv_int32);
  const Tensor* yz = optional(ctx, 7);
  Tensor& Y = ctx.output(0, yz ? yz->dtype() : X.dtype(), conv_out_shape(q.s));
  if (Y.numel() == 0) return;
  dispatch_q8(ctx, Y.dtype(), [&](auto* ytag) {
    using YT = std::remove_pointer_t<decltype(ytag)>;
    run_sink(ctx, q, X, Requantized<YT>{Y.data<YT>()});
  });
}

void run_conv_integer_8bit(KernelContext& ctx) {
  QConv q;
  if (!read_operands(ctx, 0, 1, 2, 3, q) || !kernel_takes(q)) return run_conv_integer_with(ctx, conv_int32);
  Tensor& Y = ctx.output(0, DType::Int32, conv_out_shape(q.s));
  if (Y.numel() == 0) return;
  run_sink(ctx, q, ctx.input(0), Sums{Y.data<int32_t>()});
}

}  // namespace kestrel::backends::cpu

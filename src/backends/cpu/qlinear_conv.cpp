// The CPU backend's QLinearConv on 8-bit data as it is stored, for the 2-D
// convolutions quantized models are made of (the QDQ form becomes
// QLinearConv at load, passes/fuse_qdq_conv.cpp):
//   - depthwise (one input and one output channel per group): a direct
//     kernel that adds (x - zx)(w - zw) along output rows in int32;
//   - the rest, where the CPU has AVX-512 VNNI: chunks of output positions
//     gathered as the data's bytes and multiplied by the weights on
//     vpdpbusd (qconv_kernels.h), exact in int32;
// each row then takes its bias and is requantized as ONNX Runtime does
// (ops/requantize.h), so nothing of the size of the output is ever held in
// int32 or float. Other shapes and CPUs take the general exact convolution
// (conv_int32.h).
#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cpu/conv_int32.h"
#include "backends/cpu/qlinear_conv.h"
#include "backends/cpu/qconv_kernels.h"
#include "core/cpu_isa.h"
#include "ops/conv.h"
#include "ops/conv_util.h"
#include "ops/requantize.h"

namespace kestrel::backends::cpu {

namespace {

using namespace ops;

// Budget in bytes for a chunk's packed activations and int32 sums: keeps
// them in L2 while the chunk is multiplied and requantized.
constexpr int64_t kChunkBytes = 1 << 18;

const Tensor* optional(const KernelContext& ctx, int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

// Everything a chunk needs, read once per run.
struct QConv {
  ConvShape s;
  int32_t xzp = 0, yzp = 0;
  std::vector<int32_t> wd;    // w - its zero point, [M, Cg * KH * KW]
  std::vector<int32_t> bias;  // one per output channel (zero without B)
  std::vector<float> mult;    // x_scale * w_scale / y_scale, one per output channel
  bool avx2 = cpu_isa() >= CpuIsa::Avx2;  // the loops of qconv_kernels.h's AVX2 part run here
};

bool read_qconv(const KernelContext& ctx, QConv& q) {
  const Tensor& X = ctx.input(0);
  const Tensor& Wt = ctx.input(3);
  q.s = conv_shape(ctx, X, Wt);
  if (q.s.g.nd != 2 || (X.dtype() != DType::UInt8 && X.dtype() != DType::Int8)) return false;
  if (Wt.dtype() != DType::UInt8 && Wt.dtype() != DType::Int8) return false;
  const Tensor* xz = optional(ctx, 2);
  const Tensor* wz = optional(ctx, 5);
  const Tensor* yz = optional(ctx, 7);
  if ((xz && (xz->numel() != 1 || xz->dtype() != X.dtype())) || (yz && yz->numel() != 1)) return false;
  if (wz && wz->numel() != 1 && wz->numel() != q.s.M) return false;
  q.xzp = xz ? int32_t(xz->to_i64()[0]) : 0;
  q.yzp = yz ? int32_t(yz->to_i64()[0]) : 0;
  const std::vector<float> xs = read_scales(ctx, 1, 1, "x_scale"), ws = read_scales(ctx, 4, q.s.M, "w_scale"),
                           ys = read_scales(ctx, 6, 1, "y_scale");
  q.mult.resize(size_t(q.s.M));
  for (int64_t m = 0; m < q.s.M; ++m) q.mult[size_t(m)] = xs[0] * ws[ws.size() == 1 ? 0 : size_t(m)] / ys[0];
  const int64_t K = Wt.numel() / q.s.M;
  const std::vector<int64_t> w = Wt.to_i64();
  const std::vector<int64_t> wzv = wz ? wz->to_i64() : std::vector<int64_t>{0};
  q.wd.resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) q.wd[i] = int32_t(w[i] - wzv[wzv.size() == 1 ? 0 : i / size_t(K)]);
  q.bias.assign(size_t(q.s.M), 0);
  if (const Tensor* B = optional(ctx, 8)) {
    if (B->dtype() != DType::Int32 || B->numel() != q.s.M)
      ctx.fail("bias ", dtype_name(B->dtype()), " ", shape_str(B->shape()), " must hold one int32 per output channel (",
               q.s.M, ")");
    std::memcpy(q.bias.data(), B->data<int32_t>(), size_t(q.s.M) * 4);
  }
  return true;
}

// Requantizes n accumulators of output channel m, each plus `bias`, into y
// (ops::requantize<Q>, on AVX2 where the CPU has it).
template <typename Q>
void requantize_row(const QConv& q, int64_t m, int32_t bias, const int32_t* acc, int64_t n, Q* y) {
  const float mult = q.mult[size_t(m)];
  if (q.avx2) {
    if constexpr (std::is_same_v<Q, uint8_t>)
      return qconv_avx2::requantize_u8(acc, n, bias, mult, q.yzp, y);
    else
      return qconv_avx2::requantize_s8(acc, n, bias, mult, q.yzp, y);
  }
  for (int64_t i = 0; i < n; ++i) y[i] = requantize<Q>(int32_t(uint32_t(acc[i]) + uint32_t(bias)), mult, q.yzp);
}

// One tap along an output row: acc[i] += (x[i * stride] - zx) * w.
template <typename X>
void add_tap(int32_t* acc, const X* x, int64_t n, int64_t stride, int32_t zx, int32_t w, bool avx2) {
  if (stride == 1 && avx2) {
    if constexpr (std::is_same_v<X, uint8_t>)
      return qconv_avx2::add_tap_u8(acc, x, n, zx, w);
    else
      return qconv_avx2::add_tap_s8(acc, x, n, zx, w);
  }
  for (int64_t i = 0; i < n; ++i) acc[i] += (int32_t(x[i * stride]) - zx) * w;
}

// One channel of a depthwise convolution: output rows in int32, each kernel
// tap added over the run of columns whose input is inside the image (the
// padding is zero once the zero point is taken off).
template <typename X, typename Q>
void depthwise_channel(const QConv& q, const X* x, int64_t m, Q* y, std::vector<int32_t>& acc) {
  const Window2D w(q.s.g);
  const int32_t* wd = q.wd.data() + m * w.KH * w.KW;
  acc.resize(size_t(w.OW));
  for (int64_t oh = 0; oh < w.OH; ++oh) {
    std::fill(acc.begin(), acc.end(), 0);
    for (int64_t kh = 0; kh < w.KH; ++kh) {
      const int64_t ih = oh * w.SH - w.PH + kh * w.DH;
      if (ih < 0 || ih >= w.H) continue;
      for (int64_t kw = 0; kw < w.KW; ++kw) {
        const int64_t off = kw * w.DW - w.PW;  // iw = ow * SW + off
        // Columns with 0 <= ow * SW + off < W.
        const int64_t lo = off >= 0 ? 0 : (-off + w.SW - 1) / w.SW;
        const int64_t hi = std::min(w.OW, w.W - off <= 0 ? 0 : (w.W - off + w.SW - 1) / w.SW);
        if (hi > lo)
          add_tap(acc.data() + lo, x + ih * w.W + lo * w.SW + off, hi - lo, w.SW, q.xzp, wd[kh * w.KW + kw], q.avx2);
      }
    }
    requantize_row(q, m, q.bias[size_t(m)], acc.data(), w.OW, y + oh * w.OW);
  }
}

// The activations of output positions o0 .. o1 as the VNNI product's u8
// operand, [K4][o1 - o0][4] with k = (channel, kh, kw): x as u8 (int8 data
// shifted by 128), `pad` where the window leaves the image and past K.
template <typename X>
void gather_packed(const QConv& q, const X* x, int64_t o0, int64_t o1, int64_t K4, uint8_t pad, uint8_t* U) {
  const Window2D w(q.s.g);
  const int64_t n = o1 - o0, K = q.s.Cg * w.KH * w.KW;
  const int32_t shift = std::is_same_v<X, uint8_t> ? 0 : 128;
  for (int64_t k = 0; k < K4 * 4; ++k) {
    uint8_t* out = U + (k / 4) * n * 4 + (k % 4) - o0 * 4;  // position o at out[o * 4]
    if (k >= K) {
      for (int64_t o = o0; o < o1; ++o) out[o * 4] = pad;
      continue;
    }
    const int64_t c = k / (w.KH * w.KW), kh = (k / w.KW) % w.KH, kw = k % w.KW;
    const X* plane = x + c * w.H * w.W;
    // Row by row of the output: the columns whose input is inside the image
    // are copied, the rest are padding.
    for (int64_t o = o0; o < o1;) {
      const int64_t ow0 = o % w.OW, base = o - ow0, end = std::min(o1, base + w.OW);
      const int64_t ih = (o / w.OW) * w.SH - w.PH + kh * w.DH, off = kw * w.DW - w.PW;
      if (ih < 0 || ih >= w.H) {
        for (; o < end; ++o) out[o * 4] = pad;
        continue;
      }
      const X* row = plane + ih * w.W;
      const int64_t lo = off >= 0 ? 0 : (-off + w.SW - 1) / w.SW;
      const int64_t hi = std::max(lo, std::min(w.OW, w.W - off <= 0 ? 0 : (w.W - off + w.SW - 1) / w.SW));
      for (; o < end && o - base < lo; ++o) out[o * 4] = pad;
      for (const int64_t mid = std::min(end, base + hi); o < mid; ++o)
        out[o * 4] = uint8_t(int32_t(row[(o - base) * w.SW + off]) + shift);
      for (; o < end; ++o) out[o * 4] = pad;
    }
  }
}

template <typename X, typename Q>
void run_typed(KernelContext& ctx, const QConv& q, const X* x, Q* y) {
  const ConvShape& s = q.s;
  const int64_t IS = s.g.in_size(), OS = s.g.out_size();
  if (s.Cg == 1 && s.Mg == 1) {
    parallel_for(ctx, s.N * s.M, 1, [&](int64_t t) {
      static thread_local std::vector<int32_t> acc;
      depthwise_channel(q, x + t * IS, t % s.M, y + t * OS, acc);
    });
    return;
  }
  // The product takes x - zx as u8 x minus zx' (zx' = zx, or zx + 128 for
  // int8 data), and w - zw as s8: the sum over zx' times each weight row
  // moves into the bias, so the kernel multiplies the data as it is.
  const int64_t K = s.Cg * s.g.kernel_size(), K4 = (K + 3) / 4, M8 = (s.Mg + 7) / 8 * 8;
  const int32_t zx = q.xzp + (std::is_same_v<X, uint8_t> ? 0 : 128);
  std::vector<int8_t> S(size_t(s.group * M8 * K4 * 4), 0);
  std::vector<int32_t> bias(size_t(s.M));
  for (int64_t m = 0; m < s.M; ++m) {
    int64_t sum = 0;
    int8_t* row = S.data() + ((m / s.Mg) * M8 + m % s.Mg) * K4 * 4;
    for (int64_t k = 0; k < K; ++k) {
      row[k] = int8_t(q.wd[size_t(m * K + k)]);
      sum += q.wd[size_t(m * K + k)];
    }
    bias[size_t(m)] = int32_t(uint32_t(int64_t(q.bias[size_t(m)]) - int64_t(zx) * sum));  // exact modulo 2^32
  }
  const int64_t per_thread = (OS + ctx.threads() - 1) / ctx.threads();
  const int64_t chunk = std::min(OS, std::max<int64_t>(32, std::min(kChunkBytes / (K4 * 4 + M8 * 4), per_thread)));
  const int64_t nchunks = (OS + chunk - 1) / chunk;
  parallel_for(ctx, s.N * s.group * nchunks, 1, [&](int64_t t) {
    static thread_local std::vector<uint8_t> U;
    static thread_local std::vector<int32_t> acc;
    const int64_t ng = t / nchunks, o0 = (t % nchunks) * chunk, o1 = std::min(OS, o0 + chunk), nc = o1 - o0;
    const int64_t n = ng / s.group, gi = ng % s.group;
    U.resize(size_t(K4 * 4 * nc));
    acc.resize(size_t(M8 * nc));
    gather_packed(q, x + (n * s.C + gi * s.Cg) * IS, o0, o1, K4, uint8_t(zx), U.data());
    qconv_avx512::igemm_u8s8_packed(M8, nc, K4, U.data(), S.data() + gi * M8 * K4 * 4, acc.data(), nc);
    for (int64_t m = 0; m < s.Mg; ++m) {
      const int64_t mo = gi * s.Mg + m;
      requantize_row(q, mo, bias[size_t(mo)], acc.data() + m * nc, nc, y + (n * s.M + mo) * OS + o0);
    }
  });
}

// Whether the kernels here take this convolution: depthwise always; the
// rest on AVX-512 VNNI with every weight minus its zero point in s8.
bool kernel_takes(const QConv& q) {
  if (q.s.Cg == 1 && q.s.Mg == 1) return true;
  if (!cpu_avx512_vnni()) return false;
  for (int32_t v : q.wd)
    if (v < -128 || v > 127) return false;
  return true;
}

}  // namespace

void run_qlinear_conv_8bit(KernelContext& ctx) {
  QConv q;
  const Tensor& X = ctx.input(0);
  if (!read_qconv(ctx, q) || !kernel_takes(q)) return run_qlinear_conv_with(ctx, conv_int32);
  const Tensor* yz = optional(ctx, 7);
  Tensor& Y = ctx.output(0, yz ? yz->dtype() : X.dtype(), conv_out_shape(q.s));
  if (Y.numel() == 0) return;
  dispatch_q8(ctx, X.dtype(), [&](auto* xtag) {
    using XT = std::remove_pointer_t<decltype(xtag)>;
    dispatch_q8(ctx, Y.dtype(), [&](auto* ytag) {
      using YT = std::remove_pointer_t<decltype(ytag)>;
      run_typed(ctx, q, X.data<XT>(), Y.data<YT>());
    });
  });
}

}  // namespace kestrel::backends::cpu

// com.kestrel QdqAdd: the QDQ form of an addition of two quantized tensors,
//   DequantizeLinear(a), DequantizeLinear(b) -> Add [-> activation] -> QuantizeLinear,
// as one node (passes/fuse_qdq_add.cpp makes it), with the bits of those
// nodes: each input dequantized as DequantizeLinear does, the float sum, the
// activation as the fused epilogues apply it, quantized as QuantizeLinear
// does. A residual block's addition in a quantized model is then one pass
// over 8-bit data in cache-sized blocks instead of five over float tensors.
//
// Inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
// y_zero_point, every scale and zero point one value; a and b of one shape
// (no broadcasting) and 8 bits each; y takes y_zero_point's type. The
// activation: kestrel.activation / kestrel.activation_params (ops/epilogue.h).
#include "ops/common.h"
#include "ops/epilogue.h"
#include "ops/quantize_linear.h"
#include "ops/registry.h"

namespace kestrel::ops {
namespace {

constexpr int64_t kBlock = 1024;  // values a block holds in float: three blocks stay in L1

struct Side {
  const Tensor* q;
  float scale;
  int32_t zero_point;
};

Side side(const KernelContext& ctx, int at, const char* what) {
  const Tensor& q = ctx.input(at);
  const Tensor& s = ctx.input(at + 1);
  const Tensor& z = ctx.input(at + 2);
  if (q.dtype() != DType::UInt8 && q.dtype() != DType::Int8)
    ctx.fail(what, " must be uint8 or int8, got ", dtype_name(q.dtype()));
  if (s.numel() != 1 || s.dtype() != DType::Float32 || z.numel() != 1 || z.dtype() != q.dtype())
    ctx.fail(what, "'s scale and zero point must be one float32 and one ", dtype_name(q.dtype()), " value");
  return {&q, s.to_f32()[0], int32_t(z.to_i64()[0])};
}

void dequantize(const Side& s, int64_t at, int64_t n, float* out) {
  if (s.q->dtype() == DType::UInt8)
    dequantize_bytes(s.q->data<uint8_t>() + at, s.scale, s.zero_point, out, n);
  else
    dequantize_bytes(s.q->data<int8_t>() + at, s.scale, s.zero_point, out, n);
}

void run_qdq_add(KernelContext& ctx) {
  const Side a = side(ctx, 0, "input a"), b = side(ctx, 3, "input b");
  if (a.q->shape() != b.q->shape())
    ctx.fail("inputs a ", shape_str(a.q->shape()), " and b ", shape_str(b.q->shape()), " must have one shape");
  const Tensor& ys = ctx.input(6);
  const Tensor& yz = ctx.input(7);
  if (ys.numel() != 1 || ys.dtype() != DType::Float32 || yz.numel() != 1 ||
      (yz.dtype() != DType::UInt8 && yz.dtype() != DType::Int8))
    ctx.fail("y's scale and zero point must be one float32 and one uint8 or int8 value");
  const float y_scale = ys.to_f32()[0];
  const int32_t y_zero = int32_t(yz.to_i64()[0]);
  const Epilogue epi = Epilogue::of(ctx.node);
  Tensor& y = ctx.output(0, yz.dtype(), a.q->shape());
  const int64_t n = y.numel();
  parallel_for(ctx, (n + kBlock - 1) / kBlock, 1, [&](int64_t blk) {
    float fa[kBlock], fb[kBlock];
    const int64_t at = blk * kBlock, m = std::min(kBlock, n - at);
    dequantize(a, at, m, fa);
    dequantize(b, at, m, fb);
    for (int64_t i = 0; i < m; ++i) fa[i] += fb[i];
    epi.apply(fa, m);
    if (y.dtype() == DType::UInt8)
      quantize_floats(fa, y_scale, y_zero, y.data<uint8_t>() + at, m);
    else
      quantize_floats(fa, y_scale, y_zero, y.data<int8_t>() + at, m);
  });
}

}  // namespace

KESTREL_OP(QdqAdd, {.domain = "com.kestrel", .run = run_qdq_add});

}  // namespace kestrel::ops

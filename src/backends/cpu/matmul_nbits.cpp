// The CPU backend's com.microsoft MatMulNBits: where its weights were
// dequantized at load (nbits_weight_packing.h), A times them on the fast
// products, plus the bias: the reference's own product on the reference's
// own weights, without dequantizing them again on every run; for a few rows
// of 4-bit weights (a decoder's token), the blocks themselves, unpacked in
// registers (nbits_rows.h), which reads an eighth of the bytes. Otherwise (the
// weights computed at run time, or something malformed) the reference
// kernel.
#include "backends/cpu/conv_weight_packing.h"
#include "backends/cpu/fast_kernels.h"
#include "backends/cpu/nbits_rows.h"
#include "ops/common.h"
#include "ops/gemm_util.h"

namespace kestrel::backends::cpu {

namespace {

using namespace ops;

void run_matmul_nbits_dequantized(KernelContext& ctx) {
  const int64_t K = ctx.node.attr_i("K", 0), N = ctx.node.attr_i("N", 0);
  const Tensor& A = ctx.input(0);
  if (!ctx.node.has(kPackedWeightsAttr) || A.dtype() != DType::Float32 || A.rank() < 1 || A.shape().back() != K ||
      (ctx.has_input(5) && ctx.input(5).numel() != N))
    return run_reference_kernel(ctx);
  const Tensor& W = ctx.input(int(ctx.node.attr_i(kPackedWeightsAttr, 0)));  // [K, N]
  const int64_t M = A.numel() / K;
  Shape out = A.shape();
  out.back() = N;
  Tensor& Y = ctx.output(0, DType::Float32, out);
  float* y = Y.data<float>();
  if (M <= kNbitsRowsAtMost && ctx.node.attr_i("bits", 4) == 4 && ctx.input(2).dtype() == DType::Float32) {
    // A token's product: the 4-bit blocks read in place (their sizes were
    // checked when the float copy was made), 64 columns a task.
    NbitsRows r;
    r.M = M, r.K = K, r.block = ctx.node.attr_i("block_size", 0);
    r.a = A.data<float>();
    r.b = ctx.input(1).data<uint8_t>();
    r.scales = ctx.input(2).data<float>();
    r.zp = ctx.has_input(3) ? ctx.input(3).data<uint8_t>() : nullptr;
    r.prepare();
    parallel_for(ctx, (N + 63) / 64, 1, [&](int64_t t) { nbits4_rows(r, t * 64, std::min(N, t * 64 + 64), y, N); });
  } else {
    sgemm(ctx, false, false, M, N, K, 1.0f, A.data<float>(), K, W.data<float>(), N, 0.0f, y, N);
  }
  if (ctx.has_input(5)) {
    const std::vector<float> bias = ctx.input(5).to_f32();
    for (int64_t i = 0; i < M * N; ++i) y[i] += bias[size_t(i % N)];
  }
}

}  // namespace

KESTREL_CPU_KERNEL(MatMulNBits, {.domain = "com.microsoft", .min_opset = 1, .run = run_matmul_nbits_dequantized});

}  // namespace kestrel::backends::cpu

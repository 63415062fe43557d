// The CPU backend's com.microsoft MatMulNBits, on the packed blocks as the
// file holds them (no float copy of the weights is kept: a model's 4-bit
// weights take an eighth of float32's memory while it runs, as they do in
// the file):
//   - a few rows of 4-bit weights (a decoder's token): the blocks read in
//     place and unpacked in registers (nbits_rows.h), an eighth of the bytes
//     a float copy would take;
//   - more rows (a prompt), or 2 and 8 bits: the weights dequantized a panel
//     of columns at a time into scratch (nbits_panel.h; the same floats as
//     the reference's dequantization, ops/matmul_nbits.h) and multiplied on
//     the fast products, each panel used by every row, so dequantizing
//     costs about 1/M of the product;
// plus the bias. Otherwise (act-order weights, float zero points, float16
// scales, something malformed) the reference kernel, which names what is
// wrong.
#include <algorithm>
#include <vector>

#include "backends/cpu/fast_kernels.h"
#include "backends/cpu/nbits_panel.h"
#include "backends/cpu/nbits_rows.h"
#include "ops/common.h"
#include "ops/gemm_util.h"
#include "ops/matmul_nbits.h"

namespace kestrel::backends::cpu {

namespace {

using namespace ops;

// Columns a panel holds at most: 256 columns of K = 4096 are 4 MB of
// scratch. Measured at 16 and 64 rows of bench/int4_cpu.py's chain (2
// threads): 64 and 128 columns were slower (more products, each repacking
// A), 512 and 2048 too (the panel past the caches).
constexpr int64_t kPanelColumns = 256;

// Whether the node's operands are what the fast paths read: float32 A with
// K last, packed weights, float32 scales and packed uint8 zero points of the
// sizes K, N, bits and block_size give, no g_idx, a bias of N.
bool fast_operands(KernelContext& ctx, int64_t K, int64_t N, int64_t bits, int64_t block) {
  if ((bits != 2 && bits != 4 && bits != 8) || K <= 0 || N <= 0 || block < 16 || (block & (block - 1)) != 0)
    return false;
  if (ctx.has_input(4)) return false;
  const Tensor& A = ctx.input(0);
  if (A.dtype() != DType::Float32 || A.rank() < 1 || A.shape().back() != K) return false;
  const int64_t blocks = (K + block - 1) / block;
  const Tensor& B = ctx.input(1);
  const Tensor& S = ctx.input(2);
  if (B.dtype() != DType::UInt8 || B.numel() != N * blocks * (block * bits / 8)) return false;
  if (S.dtype() != DType::Float32 || S.numel() != N * blocks) return false;
  if (ctx.has_input(3)) {
    const Tensor& Z = ctx.input(3);
    if (Z.dtype() != DType::UInt8 || Z.numel() != N * ((blocks * bits + 7) / 8)) return false;
  }
  return !ctx.has_input(5) || ctx.input(5).numel() == N;
}

void run_matmul_nbits_blocks(KernelContext& ctx) {
  const int64_t K = ctx.node.attr_i("K", 0), N = ctx.node.attr_i("N", 0);
  const int64_t bits = ctx.node.attr_i("bits", 4), block = ctx.node.attr_i("block_size", 0);
  if (!fast_operands(ctx, K, N, bits, block)) return run_reference_kernel(ctx);
  const Tensor& A = ctx.input(0);
  const int64_t M = A.numel() / K, blocks = (K + block - 1) / block;
  Shape out = A.shape();
  out.back() = N;
  Tensor& Y = ctx.output(0, DType::Float32, out);
  float* y = Y.data<float>();
  const uint8_t* b = ctx.input(1).data<uint8_t>();
  const float* scales = ctx.input(2).data<float>();
  const uint8_t* zp = ctx.has_input(3) ? ctx.input(3).data<uint8_t>() : nullptr;
  const float* a = A.data<float>();
  if (bits == 4 && M <= kNbitsRowsAtMost) {
    // A token's product: the 4-bit blocks read in place, 64 columns a task.
    NbitsRows r;
    r.M = M, r.K = K, r.block = block;
    r.a = a, r.b = b, r.scales = scales, r.zp = zp;
    r.prepare();
    parallel_for(ctx, (N + 63) / 64, 1, [&](int64_t t) { nbits4_rows(r, t * 64, std::min(N, t * 64 + 64), y, N); });
  } else if (M > 0) {
    // Panels of columns dequantized as [k, n] (nbits_panel.h), each task 16
    // columns, then the float product of every row with the panel.
    const int64_t blob = block * bits / 8, zp_row = (blocks * bits + 7) / 8;
    const int64_t width = std::min(N, kPanelColumns);
    // (Kept by the calling thread from run to run: a fresh one each run was
    // new pages from the system, every one of them faulted in and zeroed.)
    // (The other threads reach it through `p`: by its name each would find
    // its own.)
    static thread_local std::vector<float> panel;
    if (panel.size() < size_t(width * K)) panel.resize(size_t(width * K));
    float* p = panel.data();
    const Nbits4Weights w4{K, block, b, scales, zp};
    constexpr int64_t kGroup = 16;
    for (int64_t n0 = 0; n0 < N; n0 += width) {
      const int64_t n1 = std::min(N, n0 + width), cols = n1 - n0;
      parallel_for(ctx, (cols + kGroup - 1) / kGroup, 1, [&](int64_t t) {
        const int64_t j0 = t * kGroup, j1 = std::min(cols, j0 + kGroup);
        if (bits == 4) return nbits4_panel(w4, n0 + j0, n0 + j1, p + j0, cols);
        // 2 and 8 bits: the reference's dequantization, column by column,
        // transposed into the panel.
        static thread_local std::vector<float> column;
        column.resize(size_t(K));
        for (int64_t j = j0; j < j1; ++j) {
          const int64_t n = n0 + j;
          nbits_to_float(K, bits, block, b + n * blocks * blob, scales + n * blocks, zp ? zp + n * zp_row : nullptr, 0,
                         1, column.data());
          for (int64_t k = 0; k < K; ++k) p[k * cols + j] = column[size_t(k)];
        }
      });
      sgemm(ctx, false, false, M, cols, K, 1.0f, a, K, p, cols, 0.0f, y + n0, N);
    }
  }
  if (ctx.has_input(5)) {
    const std::vector<float> bias = ctx.input(5).to_f32();
    for (int64_t i = 0; i < M * N; ++i) y[i] += bias[size_t(i % N)];
  }
}

}  // namespace

KESTREL_CPU_KERNEL(MatMulNBits, {.domain = "com.microsoft", .min_opset = 1, .run = run_matmul_nbits_blocks});

}  // namespace kestrel::backends::cpu

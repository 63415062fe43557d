// com.microsoft MatMulNBits with 4-bit weights, as ops/matmul_nbits.cpp has
// it (the blocks dequantized, (q - zero point) * scale, then A times them
// plus the bias), with the weights left packed on the device: half a byte a
// weight is read, and dequantized where the kernel loads it
// (shaders/nbits_weights.glsl).
//   - A few rows (a decoder's token): shaders/gemv_nbits.comp, one pass over
//     the packed words.
//   - More: the GEMM kernels' _nbits variants (gemm_record.h), the tile and
//     tensor cores chosen as for any MatMul.
// 2- and 8-bit weights, act-order (g_idx) and float zero points stay on the
// CPU.
#include "backends/vulkan/ops/gemm_record.h"
#include "backends/vulkan/ops/integer_product.h"

namespace kestrel::vulkan {
namespace {

// Rows of A at most for the one-pass kernel (its ROWS): past them the tiled
// GEMM reads each weight once per row tile instead of once per row.
constexpr int64_t kGemvRowsAtMost = 4;
// Columns a workgroup of the one-pass kernel computes (its COLS).
constexpr int64_t kGemvColumns = 4;

std::string nbits_check(const ir::Node& n, const ir::Graph& g) {
  const int64_t bits = n.attr_i("bits", 4), block = n.attr_i("block_size", 0);
  if (bits != 4) return "MatMulNBits with " + std::to_string(bits) + "-bit weights (the Vulkan kernel reads 4)";
  if (block < 16 || (block & (block - 1)) != 0) return "MatMulNBits block_size " + std::to_string(block);
  if (n.inputs.size() > 4 && n.inputs[4] >= 0) return "MatMulNBits with g_idx (act-order weights)";
  if (n.inputs.size() > 3 && n.inputs[3] >= 0 && g.values[size_t(n.inputs[3])].dtype != DType::UInt8)
    return "MatMulNBits with float zero points";
  return "";
}

void matmul_nbits(OpContext& ctx) {
  const int64_t K = ctx.node.attr_i("K", 0), N = ctx.node.attr_i("N", 0), block = ctx.node.attr_i("block_size", 0);
  if (K <= 0 || N <= 0) ctx.fail("K and N must be positive, got K ", K, ", N ", N);
  require_float(ctx, {0, 2, 5});
  const GpuTensor& A = ctx.input(0);
  const GpuTensor& B = ctx.input(1);
  const GpuTensor& scales = ctx.input(2);
  const int64_t blocks = (K + block - 1) / block;
  if (A.shape.empty() || A.shape.back() != K)
    ctx.fail("A must have K (", K, ") as its last dim, got ", shape_str(A.shape));
  if (B.dtype != DType::UInt8 || B.numel() != N * blocks * block / 2)
    ctx.fail("B must be uint8 [N, blocks, block_size / 2] = [", N, ", ", blocks, ", ", block / 2, "], got ",
             dtype_name(B.dtype), " ", shape_str(B.shape));
  if (scales.numel() != N * blocks)
    ctx.fail("scales must hold N x blocks (", N * blocks, ") values, got ", shape_str(scales.shape));
  const GpuTensor* zp = optional_input(ctx, 3);
  if (zp && (zp->dtype != DType::UInt8 || zp->numel() != N * ((blocks + 1) / 2)))
    ctx.fail("zero_points must be uint8 packed as B is, [N, ", (blocks + 1) / 2, "] bytes, got ", shape_str(zp->shape));
  const GpuTensor* bias = optional_input(ctx, 5);
  if (bias && bias->numel() != N) ctx.fail("bias has shape ", shape_str(bias->shape), ", not [", N, "]");
  const int64_t M = A.numel() / K;
  require_int32_sizes(ctx, {A.numel(), M * N, B.numel()});
  Shape out = A.shape;
  out.back() = N;
  GpuTensor& Y = ctx.output(0, A.dtype, out);
  if (Y.numel() == 0) return;

  NbitsWeights w{&scales, zp, uint32_t(block)};
  if (M <= kGemvRowsAtMost) {
    const uint32_t push[3] = {uint32_t(M), uint32_t(N), uint32_t(K)};
    // 16-byte loads of a column's words where every column starts 16-byte
    // aligned and holds whole 32-weight chunks; 4-wide loads of A where its
    // rows start on 4 elements.
    const bool vec_words = B.range(false).offset % 16 == 0 && (blocks * block) % 32 == 0;
    const bool vec_a = A.range(false).offset % (4 * A.element_bytes()) == 0 && K % 4 == 0;
    std::vector<int32_t> spec = {bias ? 1 : 0, vec_words ? 1 : 0, vec_a ? 1 : 0};
    std::vector<Binding> bind = {In(A), In(B), In(bias ? *bias : A), Out(Y)};  // (binding 4 unused)
    bind_nbits_weights(w, B, spec, bind);
    ctx.dispatch("gemv_nbits", spec, bind, push, sizeof push, uint32_t((N + kGemvColumns - 1) / kGemvColumns));
    return;
  }
  GemmPlan plan;
  GemmPush& p = plan.p;
  init_batch(p);
  p.M = uint32_t(M), p.N = uint32_t(N), p.K = uint32_t(K);
  p.alpha = 1, p.beta = 1;
  p.sam = uint32_t(K), p.sak = 1;
  p.sbk = 1, p.sbn = uint32_t(K);  // B[k, n] is W[n, k]: k-major (the kernel reads the packed words)
  p.scm = 0, p.scn = 1;            // the bias, broadcast over rows
  plan.b_ncontig = false;
  plan.has_c = bias != nullptr;
  plan.nbits = &w;
  record_gemm(ctx, plan, A, B, bias, Y, ActParams{});
}

}  // namespace

KESTREL_VK_OP(MatMulNBits, {.domain = "com.microsoft", .record = matmul_nbits, .check = nbits_check});

}  // namespace kestrel::vulkan

// com.microsoft MatMulNBits (ONNX Runtime's contrib op for weights of 2, 4 or
// 8 bits in blocks, which its weight-only quantizers and model builders
// write): B's blocks dequantized, (q - zero_point) * scale, then A times B
// transposed in float32, plus the bias. ONNX Runtime computes the same in
// float32 at accuracy_level 0 to 3; at 4 it quantizes A to int8 and rounds
// otherwise (tests/python/test_microsoft_ops.py compares at level 0).
//
// Inputs: A (float, [..., K]); B (uint8, [N, blocks, block_size * bits / 8]:
// each column's K weights packed from the lowest bits up); scales (float,
// N x blocks); zero_points (optional uint8, each column's blocks packed as
// B is, else 2^(bits - 1)); g_idx (not supported); bias (optional, N).
// Attributes: K, N, bits (4), block_size (a power of 2, at least 16).
#include "ops/matmul_nbits.h"

#include "ops/common.h"
#include "ops/gemm_util.h"

namespace kestrel::ops {

void nbits_to_float(int64_t K, int64_t bits, int64_t block, const uint8_t* b, const float* scales, const uint8_t* zp,
                    int64_t n0, int64_t n1, float* w) {
  const int64_t blocks = (K + block - 1) / block, blob = block * bits / 8, per_byte = 8 / bits;
  const int64_t zp_row = (blocks * bits + 7) / 8;  // bytes of packed zero points per column
  // The nth `bits`-wide value of a packed row, from the lowest bits up.
  const uint32_t mask = (1u << bits) - 1;
  auto unpack = [&](const uint8_t* row, int64_t i) {
    return int32_t((row[i / per_byte] >> ((i % per_byte) * bits)) & mask);
  };
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int32_t z = zp ? unpack(zp + n * zp_row, blk) : int32_t(1) << (bits - 1);
      const float s = scales[size_t(n * blocks + blk)];
      const uint8_t* q = b + (n * blocks + blk) * blob;
      for (int64_t j = 0; j < block && blk * block + j < K; ++j)
        w[size_t(n * K + blk * block + j)] = float(unpack(q, j) - z) * s;
    }
}

namespace {

void run_matmul_nbits(KernelContext& ctx) {
  const int64_t K = ctx.node.attr_i("K", 0), N = ctx.node.attr_i("N", 0);
  const int64_t bits = ctx.node.attr_i("bits", 4), block = ctx.node.attr_i("block_size", 0);
  if (bits != 2 && bits != 4 && bits != 8) ctx.fail("bits must be 2, 4 or 8, got ", bits);
  if (K <= 0 || N <= 0 || block < 16 || (block & (block - 1)) != 0)
    ctx.fail("K and N must be positive and block_size a power of 2 of at least 16, got K ", K, ", N ", N,
             ", block_size ", block);
  if (ctx.has_input(4)) ctx.fail("g_idx (act-order weights) is not supported");
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  const int64_t blocks = (K + block - 1) / block, blob = block * bits / 8;
  if (A.dtype() != DType::Float32 || A.rank() < 1 || A.shape().back() != K)
    ctx.fail("A must be float with K (", K, ") as its last dim, got ", dtype_name(A.dtype()), " ", shape_str(A.shape()));
  if (B.dtype() != DType::UInt8 || B.numel() != N * blocks * blob)
    ctx.fail("B must be uint8 [N, blocks, block_size * bits / 8] = [", N, ", ", blocks, ", ", blob, "], got ",
             dtype_name(B.dtype()), " ", shape_str(B.shape()));
  const Tensor& S = ctx.input(2);
  if (!dtype_is_float(S.dtype()) || S.numel() != N * blocks)
    ctx.fail("scales must be float with N x blocks (", N * blocks, ") values, got ", shape_str(S.shape()));
  const std::vector<float> scales = S.to_f32();
  const int64_t zp_row = (blocks * bits + 7) / 8;  // bytes of packed zero points per column
  const uint8_t* zp = nullptr;
  if (ctx.has_input(3)) {
    const Tensor& Z = ctx.input(3);
    if (Z.dtype() != DType::UInt8 || Z.numel() != N * zp_row)
      ctx.fail("zero_points must be uint8 packed as B is, [N, ", zp_row, "] bytes, got ", dtype_name(Z.dtype()), " ",
               shape_str(Z.shape()), " (float zero points are not supported)");
    zp = Z.data<uint8_t>();
  }
  std::vector<float> bias;
  if (ctx.has_input(5)) {
    bias = ctx.input(5).to_f32();
    if (int64_t(bias.size()) != N) ctx.fail("bias has shape ", shape_str(ctx.input(5).shape()), ", not [", N, "]");
  }
  // W[N, K] in float: (q - zero_point) * scale, block by block.
  std::vector<float> w(size_t(N * K));
  parallel_for(ctx, N, 1, [&](int64_t n) {
    nbits_to_float(K, bits, block, B.data<uint8_t>(), scales.data(), zp, n, n + 1, w.data());
  });
  const int64_t M = A.numel() / K;
  Shape out = A.shape();
  out.back() = N;
  Tensor& Y = ctx.output(0, DType::Float32, out);
  float* y = Y.data<float>();
  sgemm(ctx, false, true, M, N, K, 1.0f, A.data<float>(), K, w.data(), K, 0.0f, y, N);
  if (!bias.empty())
    for (int64_t i = 0; i < M * N; ++i) y[i] += bias[size_t(i % N)];
}

}  // namespace

KESTREL_OP(MatMulNBits, {.domain = "com.microsoft", .run = run_matmul_nbits, .uses_products = true});

}  // namespace kestrel::ops

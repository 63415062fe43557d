// The tiled GEMM kernel (shaders/gemm.comp) as a building block: Gemm and
// MatMul record it, and so does the fused transformer encoder.
#pragma once
#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {

struct GemmPush {
  uint32_t M, N, K;
  uint32_t batch_base, mtile_base;
  uint32_t sam, sak, sbk, sbn;
  uint32_t scm, scn;
  float alpha, beta, act_a, act_b;
  uint32_t bdims[4], sab[4], sbb[4];
  uint32_t sym, syb[4];
};
static_assert(sizeof(GemmPush) <= 128, "push constants are limited to 128 bytes");

inline void init_batch(GemmPush& p) {
  for (int d = 0; d < 4; ++d) p.bdims[d] = 1, p.sab[d] = 0, p.sbb[d] = 0, p.syb[d] = 0;
  p.sym = 0;
}

// B as com.microsoft MatMulNBits' 4-bit blocks (shaders/nbits_weights.glsl):
// the GEMM kernels' _nbits variants read the packed words (the GEMM's b
// operand), these scales and zero points, and dequantize as they load.
struct NbitsWeights {
  const GpuTensor* scales = nullptr;       // [N, blocks], the run's float storage
  const GpuTensor* zero_points = nullptr;  // packed as B is, or null (8)
  uint32_t block = 32;                     // weights per block along k: a power of 2, at least 16
};

// What every kernel reading nbits_weights.glsl takes beside its own: its
// specialization constants 8 (the block) and 9 (zero points given), after
// `spec` is padded to 8, and its bindings 5 (scales) and 6 (zero points, else
// `packed`, unread), after the kernel's 5. `packed`: B's words.
void bind_nbits_weights(const NbitsWeights& w, const GpuTensor& packed, std::vector<int32_t>& spec,
                        std::vector<Binding>& bind);

// A GEMM to record: the push constants, the batch count, and the operands'
// contiguity (specialization constants of the shader).
struct GemmPlan {
  GemmPush p{};
  uint64_t batches = 1;
  bool a_kcontig = true, b_ncontig = true, has_c = false;
  // Y and the residual are float32 in a float16 node (a fused encoder's
  // float32 stream): the kernel's _stream32 variant. Same as false in a
  // float32 node.
  bool y_float32 = false;
  // Y's rows are padded (sym past N, a multiple of 8) and the padding is
  // the caller's scratch: the tensor-core kernels may store whole groups of
  // 8 outputs across N (the columns past N get the epilogue of a zero
  // sum). Only where there is no C or residual to read past N.
  bool y_row_scratch = false;
  // B is 4-bit blocks (k-major, b_ncontig false), not elements.
  const NbitsWeights* nbits = nullptr;
};

// MatMul's operands as a GEMM (NumPy's view: a 1-D A is one row, a 1-D B
// one column; batch dims broadcast, up to 4): the plan's sizes, strides and
// batches, and the output's shape in `out`. Every batch of A against one B
// stacks into one tall GEMM (the transformer projection case, filling the
// tiles better) unless `stack` is false.
GemmPlan plan_matmul(OpContext& ctx, const Shape& a_shape, const Shape& b_shape, Shape& out, bool stack = true);

// Records a GEMM kernel over `plan`'s output tiles (tile_m x tile_n each) in
// bounded dispatches: whole batches when a batch is small, else bands of row
// tiles within each batch.
void record_gemm_tiles(OpContext& ctx, const std::string& shader, const std::vector<int32_t>& spec,
                       const std::vector<Binding>& bind, GemmPlan plan, uint32_t tile_m, uint32_t tile_n);

// Records `plan` in bounded dispatches: whole batches when a batch is small,
// else bands of row tiles within each batch. `residual` (read at Y's index,
// may be Y itself) is added after the activation.
void record_gemm(OpContext& ctx, GemmPlan plan, const GpuTensor& a, const GpuTensor& b, const GpuTensor* c,
                 const GpuTensor& y, ActParams act, const GpuTensor* residual = nullptr);

}  // namespace kestrel::vulkan

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
};

// Records `plan` in bounded dispatches: whole batches when a batch is small,
// else bands of row tiles within each batch. `residual` (read at Y's index,
// may be Y itself) is added after the activation.
void record_gemm(OpContext& ctx, GemmPlan plan, const GpuTensor& a, const GpuTensor& b, const GpuTensor* c,
                 const GpuTensor& y, ActParams act, const GpuTensor* residual = nullptr);

}  // namespace kestrel::vulkan

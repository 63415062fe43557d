// MatMul (shaders/gemm.comp, recorded by gemm_record.h as Gemm is): 1-D
// operands and broadcast batches are views through strides.
#include <algorithm>

#include "backends/vulkan/ops/gemm_record.h"

namespace kestrel::vulkan {
namespace {

void matmul(OpContext& ctx) {
  require_float(ctx, {0, 1});
  const GpuTensor& A = ctx.input(0);
  const GpuTensor& B = ctx.input(1);
  if (A.shape.empty() || B.shape.empty())
    ctx.fail("operands must have rank >= 1, got ", shape_str(A.shape), " and ", shape_str(B.shape));
  // NumPy's view: a 1-D A is one row, a 1-D B one column.
  Shape a = A.shape, b = B.shape;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  if (b[b.size() - 2] != K) ctx.fail("inner dimensions differ: ", shape_str(A.shape), " x ", shape_str(B.shape));
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape batch = broadcast_pair(ctx, ab, bb);
  if (batch.size() > 4) ctx.unsupported("more than 4 batch dims");
  Shape out = batch;
  if (A.shape.size() > 1) out.push_back(M);
  if (B.shape.size() > 1) out.push_back(N);

  GemmPlan plan;
  GemmPush& p = plan.p;
  init_batch(p);
  p.K = uint32_t(K), p.N = uint32_t(N);
  p.alpha = 1;
  p.sam = uint32_t(K), p.sak = 1, p.sbk = uint32_t(N), p.sbn = 1;
  bool b_shared = std::all_of(bb.begin(), bb.end(), [](int64_t d) { return d == 1; });
  if (b_shared && ab == batch) {
    // Every batch of A against one B: the batches stack into one tall GEMM
    // (the transformer projection case), filling the tiles better.
    p.M = uint32_t(shape_numel(batch) * M);
  } else {
    p.M = uint32_t(M);
    plan.batches = uint64_t(shape_numel(batch));
    // Right-align both operands' batch dims to the output's, then to 4.
    size_t off = 4 - batch.size();
    uint64_t sa = uint64_t(M * K), sb = uint64_t(K * N);
    for (size_t d = batch.size(); d-- > 0;) {
      int64_t da = d + ab.size() >= batch.size() ? ab[d + ab.size() - batch.size()] : 1;
      int64_t db = d + bb.size() >= batch.size() ? bb[d + bb.size() - batch.size()] : 1;
      p.bdims[off + d] = uint32_t(batch[d]);
      p.sab[off + d] = da == 1 ? 0 : uint32_t(sa);
      p.sbb[off + d] = db == 1 ? 0 : uint32_t(sb);
      sa *= uint64_t(da);
      sb *= uint64_t(db);
    }
  }
  GpuTensor& Y = ctx.output(0, A.dtype, out);
  record_gemm(ctx, plan, A, B, nullptr, Y, fused_activation(ctx.node));
}

}  // namespace

KESTREL_VK_OP(MatMul, {.record = matmul});

}  // namespace kestrel::vulkan

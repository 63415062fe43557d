// Gemm and MatMul (shaders/gemm.comp): one tiled kernel addressed through
// strides, so transposes, 1-D operands and broadcast batches are all views.
#include <algorithm>

#include "backends/vulkan/ops/gemm_record.h"

namespace kestrel::vulkan {
namespace {

void gemm(OpContext& ctx) {
  require_float(ctx, {0, 1, 2});
  const GpuTensor& A = ctx.input(0);
  const GpuTensor& B = ctx.input(1);
  if (A.shape.size() != 2 || B.shape.size() != 2)
    ctx.fail("A and B must be 2-D, got ", shape_str(A.shape), " and ", shape_str(B.shape));
  bool ta = ctx.node.attr_i("transA", 0) != 0, tb = ctx.node.attr_i("transB", 0) != 0;
  int64_t M = ta ? A.shape[1] : A.shape[0], K = ta ? A.shape[0] : A.shape[1];
  int64_t KB = tb ? B.shape[1] : B.shape[0], N = tb ? B.shape[0] : B.shape[1];
  if (K != KB) ctx.fail("inner dimensions differ: A ", shape_str(A.shape), " and B ", shape_str(B.shape));
  float alpha = ctx.node.attr_f("alpha", 1.f), beta = ctx.node.attr_f("beta", 1.f);
  GemmPlan plan;
  GemmPush& p = plan.p;
  init_batch(p);
  p.M = uint32_t(M), p.N = uint32_t(N), p.K = uint32_t(K);
  p.alpha = alpha;
  p.beta = beta;
  // A is [M,K] or, transposed, [K,M]; B is [K,N] or [N,K].
  plan.a_kcontig = !ta;
  p.sam = ta ? 1 : uint32_t(K);
  p.sak = ta ? uint32_t(M) : 1;
  plan.b_ncontig = !tb;
  p.sbk = tb ? 1 : uint32_t(N);
  p.sbn = tb ? uint32_t(K) : 1;
  const GpuTensor* C = nullptr;
  if (ctx.has_input(2) && beta != 0.f) {
    C = &ctx.input(2);
    const Shape& cs = C->shape;
    if (cs.size() > 2) ctx.fail("C ", shape_str(cs), " cannot be broadcast to [", M, ",", N, "]");
    int64_t cm = cs.size() == 2 ? cs[0] : 1, cn = cs.empty() ? 1 : cs.back();
    if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
      ctx.fail("C ", shape_str(cs), " cannot be broadcast to [", M, ",", N, "]");
    p.scm = cm == 1 ? 0 : uint32_t(cn);
    p.scn = cn == 1 ? 0 : 1;
    plan.has_c = true;
  }
  GpuTensor& Y = ctx.output(0, A.dtype, {M, N});
  record_gemm(ctx, plan, A, B, C, Y, fused_activation(ctx.node));
}

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

KESTREL_VK_OP(Gemm, {.min_opset = 7, .record = gemm});
KESTREL_VK_OP(MatMul, {.record = matmul});

}  // namespace kestrel::vulkan

// Gemm (shaders/gemm.comp, recorded by gemm_record.h as MatMul is):
// transposes are views through strides.
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

}  // namespace

KESTREL_VK_OP(Gemm, {.min_opset = 7, .record = gemm});

}  // namespace kestrel::vulkan

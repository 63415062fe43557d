// MatMul (numpy semantics: 1-D operands, broadcast batch dims) and
// MatMulInteger (uint8/int8 with zero points, exact int32 result) and
// QLinearMatMul (the same, requantized to 8 bits).
#include "ops/epilogue.h"
#include "ops/common.h"
#include "ops/gemm_util.h"
#include "ops/requantize.h"

namespace kestrel::ops {
namespace {

// The numpy matmul view of two operands: batch offsets (elements) of A, B
// and C for every broadcast batch index, and the output shape.
struct MatMulPlan {
  int64_t M = 0, N = 0, K = 0;
  std::vector<int64_t> a_off, b_off, c_off;
  Shape out;
};

MatMulPlan plan_matmul(const KernelContext& ctx, const Shape& a_in, const Shape& b_in) {
  if (a_in.empty() || b_in.empty()) ctx.fail("operands must have rank >= 1, got ", shape_str(a_in), " and ", shape_str(b_in));
  Shape a = a_in, b = b_in;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  MatMulPlan p;
  p.M = a[a.size() - 2];
  p.K = a.back();
  p.N = b.back();
  if (b[b.size() - 2] != p.K)
    ctx.fail("inner dimensions differ: ", shape_str(a_in), " x ", shape_str(b_in));
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape batch = broadcast_shapes(ctx, ab, bb);
  std::vector<int64_t> sa = broadcast_strides(ab, batch), sb = broadcast_strides(bb, batch);
  int64_t nb = shape_numel(batch);
  std::vector<int64_t> idx(batch.size(), 0);
  for (int64_t i = 0; i < nb; ++i) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < batch.size(); ++d) oa += idx[d] * sa[d], ob += idx[d] * sb[d];
    p.a_off.push_back(oa * p.M * p.K);
    p.b_off.push_back(ob * p.K * p.N);
    p.c_off.push_back(i * p.M * p.N);
    for (size_t d = batch.size(); d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  p.out = batch;
  if (a_in.size() > 1) p.out.push_back(p.M);
  if (b_in.size() > 1) p.out.push_back(p.N);
  return p;
}

template <typename T>
void naive_matmul(const KernelContext& ctx, const MatMulPlan& p, const T* a, const T* b, T* c) {
  parallel_for(ctx, int64_t(p.c_off.size()) * p.M, 1, [&](int64_t r) {
    int64_t bi = r / p.M, i = r % p.M;
    const T* ar = a + p.a_off[size_t(bi)] + i * p.K;
    const T* bm = b + p.b_off[size_t(bi)];
    T* cr = c + p.c_off[size_t(bi)] + i * p.N;
    std::fill_n(cr, p.N, T(0));
    for (int64_t k = 0; k < p.K; ++k)
      for (int64_t j = 0; j < p.N; ++j) cr[j] += ar[k] * bm[k * p.N + j];
  });
}

void run_matmul(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  if (A.dtype() != B.dtype())
    ctx.fail("operand types differ: ", dtype_name(A.dtype()), " and ", dtype_name(B.dtype()));
  MatMulPlan p = plan_matmul(ctx, A.shape(), B.shape());
  Tensor& C = ctx.output(0, A.dtype(), p.out);
  if (C.numel() == 0) return;
  if (A.dtype() != DType::Float32) {
    if (ctx.node.has(kEpilogueAttr)) ctx.fail("a fused activation needs a float32 MatMul");
    switch (A.dtype()) {
      case DType::Float64: return naive_matmul(ctx, p, A.data<double>(), B.data<double>(), C.data<double>());
      case DType::Int32: return naive_matmul(ctx, p, A.data<int32_t>(), B.data<int32_t>(), C.data<int32_t>());
      case DType::Int64: return naive_matmul(ctx, p, A.data<int64_t>(), B.data<int64_t>(), C.data<int64_t>());
      case DType::UInt32: return naive_matmul(ctx, p, A.data<uint32_t>(), B.data<uint32_t>(), C.data<uint32_t>());
      case DType::UInt64: return naive_matmul(ctx, p, A.data<uint64_t>(), B.data<uint64_t>(), C.data<uint64_t>());
      default: ctx.fail("element type ", dtype_name(A.dtype()), " is not supported");
    }
  }
  const float* a = A.data<float>();
  const float* b = B.data<float>();
  float* c = C.data<float>();
  // When B is shared by every batch and A's batches are contiguous, the
  // batches stack into one tall GEMM.
  int64_t nb = int64_t(p.c_off.size());
  bool b_shared = true, a_contig = true;
  for (int64_t i = 0; i < nb; ++i) {
    b_shared = b_shared && p.b_off[size_t(i)] == 0;
    a_contig = a_contig && p.a_off[size_t(i)] == i * p.M * p.K;
  }
  if (b_shared && a_contig) {
    sgemm(ctx, false, false, nb * p.M, p.N, p.K, 1.f, a, p.K, b, p.N, 0.f, c, p.N);
  } else {
    sgemm_batched(ctx, false, false, p.M, p.N, p.K, a, p.K, p.a_off.data(), b, p.N, p.b_off.data(), c, p.N,
                  p.c_off.data(), nb);
  }
  Epilogue::of(ctx.node).apply(c, C.numel());  // a fused activation, if any
}

void run_matmul_integer(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  MatMulPlan p = plan_matmul(ctx, A.shape(), B.shape());
  Tensor azp = ctx.has_input(2) ? ctx.input(2) : Tensor();
  Tensor bzp = ctx.has_input(3) ? ctx.input(3) : Tensor();
  // a_zero_point may be per row of A (M values), b_zero_point per column of B (N values).
  int64_t M = p.M, K = p.K, N = p.N;
  std::vector<int32_t> a = widen_int8(
      ctx, A, azp.defined() ? &azp : nullptr, [&](int64_t i) { return (i / K) % M; }, M, "A");
  std::vector<int32_t> b = widen_int8(
      ctx, B, bzp.defined() ? &bzp : nullptr, [&](int64_t i) { return i % N; }, N, "B");
  Tensor& C = ctx.output(0, DType::Int32, p.out);
  int32_t* c = C.data<int32_t>();
  for (size_t i = 0; i < p.c_off.size(); ++i)
    igemm(ctx, M, N, K, a.data() + p.a_off[i], b.data() + p.b_off[i], c + p.c_off[i]);
}

// QLinearMatMul: inputs a, a_scale, a_zero_point, b, b_scale, b_zero_point,
// y_scale, y_zero_point. a's scale and zero point may be per row (M values),
// b's per column (N values).
void run_qlinear_matmul(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(3);
  MatMulPlan p = plan_matmul(ctx, A.shape(), B.shape());
  const int64_t M = p.M, K = p.K, N = p.N;
  std::vector<float> a_scale = read_scales(ctx, 1, M, "a_scale");
  std::vector<float> b_scale = read_scales(ctx, 4, N, "b_scale");
  std::vector<float> y_scale = read_scales(ctx, 6, 1, "y_scale");
  const Tensor* azp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* bzp = ctx.has_input(5) ? &ctx.input(5) : nullptr;
  std::vector<int32_t> a = widen_int8(ctx, A, azp, [&](int64_t i) { return (i / K) % M; }, M, "A");
  std::vector<int32_t> b = widen_int8(ctx, B, bzp, [&](int64_t i) { return i % N; }, N, "B");
  Tensor acc(DType::Int32, p.out);
  int32_t* c = acc.data<int32_t>();
  for (size_t i = 0; i < p.c_off.size(); ++i)
    igemm(ctx, M, N, K, a.data() + p.a_off[i], b.data() + p.b_off[i], c + p.c_off[i]);
  const RequantMultipliers mult = requant_multipliers(a_scale, b_scale, y_scale[0], M, N);
  const Tensor* yzp = ctx.has_input(7) ? &ctx.input(7) : nullptr;
  if (yzp && yzp->numel() != 1) ctx.fail("y_zero_point must be a scalar, got ", shape_str(yzp->shape()));
  Tensor& Y = ctx.output(0, yzp ? yzp->dtype() : A.dtype(), p.out);
  requantize_into(ctx, acc, mult.values, yzp ? int32_t(yzp->to_i64()[0]) : 0, Y,
                  [&](int64_t i) { return mult.at(i % (M * N)); });
}

}  // namespace

KESTREL_OP(MatMul, {.min_opset = 1, .run = run_matmul, .uses_products = true});
KESTREL_OP(MatMulInteger, {.min_opset = 10, .run = run_matmul_integer, .needs_fp32_storage = true, .uses_products = true});
KESTREL_OP(QLinearMatMul, {.min_opset = 10, .run = run_qlinear_matmul, .uses_products = true});

}  // namespace kestrel::ops

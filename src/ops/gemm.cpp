// Gemm: Y = alpha * op(A) * op(B) + beta * C, C unidirectionally broadcast to [M, N].
#include "ops/epilogue.h"
#include "ops/common.h"
#include "ops/gemm_util.h"

namespace kestrel::ops {
namespace {

template <typename T>
void naive_gemm(const KernelContext& ctx, bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* a,
                const T* b, T beta, T* y) {
  parallel_for(ctx, M, 1, [&](int64_t i) {
    for (int64_t j = 0; j < N; ++j) {
      T acc = T(0);
      for (int64_t k = 0; k < K; ++k) acc += (ta ? a[k * M + i] : a[i * K + k]) * (tb ? b[j * K + k] : b[k * N + j]);
      y[i * N + j] = alpha * acc + beta * y[i * N + j];
    }
  });
}

template <typename T>
void run_typed(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  bool ta = n.attr_i("transA", 0) != 0, tb = n.attr_i("transB", 0) != 0;
  if (A.rank() != 2 || B.rank() != 2)
    ctx.fail("A and B must be 2-D, got ", shape_str(A.shape()), " and ", shape_str(B.shape()));
  int64_t M = ta ? A.dim(1) : A.dim(0), K = ta ? A.dim(0) : A.dim(1);
  int64_t KB = tb ? B.dim(1) : B.dim(0), N = tb ? B.dim(0) : B.dim(1);
  if (K != KB)
    ctx.fail("inner dimensions differ: A ", shape_str(A.shape()), (ta ? " (transposed)" : ""), " and B ",
             shape_str(B.shape()), (tb ? " (transposed)" : ""));
  T alpha = T(n.attr_f("alpha", 1.f)), beta = T(n.attr_f("beta", 1.f));
  Tensor& Y = ctx.output(0, DTypeOf<T>::value, {M, N});
  T* y = Y.data<T>();
  bool has_c = ctx.has_input(2) && beta != T(0);
  if (has_c) {
    const Tensor& C = ctx.input(2);
    if (C.dtype() != A.dtype()) ctx.fail("C type ", dtype_name(C.dtype()), " differs from ", dtype_name(A.dtype()));
    if (C.rank() > 2 || broadcast_shapes(ctx, C.shape(), {M, N}) != Shape{M, N})
      ctx.fail("C ", shape_str(C.shape()), " cannot be broadcast to [", M, ",", N, "]");
    std::vector<int64_t> st = broadcast_strides(C.shape(), {M, N});
    const T* c = C.data<T>();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) y[i * N + j] = c[i * st[0] + j * st[1]];
  }
  if (Y.numel() == 0) return;
  const T* a = A.data<T>();
  const T* b = B.data<T>();
  T eff_beta = has_c ? beta : T(0);
  if constexpr (std::is_same_v<T, float>) {
    sgemm(ctx, ta, tb, M, N, K, alpha, a, ta ? M : K, b, tb ? K : N, eff_beta, y, N);
    Epilogue::of(n).apply(y, M * N);  // a fused activation, if any
  } else {
    if (n.has(kEpilogueAttr)) ctx.fail("a fused activation needs a float32 Gemm");
    naive_gemm(ctx, ta, tb, M, N, K, alpha, a, b, eff_beta, y);
  }
}

void run_gemm(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  if (ctx.input(1).dtype() != A.dtype())
    ctx.fail("A and B types differ: ", dtype_name(A.dtype()), " and ", dtype_name(ctx.input(1).dtype()));
  switch (A.dtype()) {
    case DType::Float32: return run_typed<float>(ctx);
    case DType::Float64: return run_typed<double>(ctx);
    case DType::Int32: return run_typed<int32_t>(ctx);
    case DType::Int64: return run_typed<int64_t>(ctx);
    case DType::UInt32: return run_typed<uint32_t>(ctx);
    case DType::UInt64: return run_typed<uint64_t>(ctx);
    default: ctx.fail("element type ", dtype_name(A.dtype()), " is not supported");
  }
}

}  // namespace

KESTREL_OP(Gemm, {.min_opset = 7, .run = run_gemm, .uses_products = true});

}  // namespace kestrel::ops

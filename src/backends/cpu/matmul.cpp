// The CPU backend's QLinearMatMul and MatMulInteger on 8-bit data as it is
// stored, for the projections of quantized transformers (the QDQ form
// becomes QLinearMatMul at load, passes/fuse_qdq_matmul.cpp; dynamically
// quantized models run MatMulInteger after DynamicQuantizeLinear): where the
// CPU has AVX-512 VNNI and B is a matrix, A's rows (its batch dimensions
// folded in) times B's panels on vpdpbusd (qgemm_kernels.h), exact in int32,
// zero points of any value (run_product says how), each sum then
// requantized as ONNX Runtime does (ops/requantize.h) or written as int32.
// Nothing of the output's size is held in int32 or float beside it. Other
// shapes, per-row zero points or scales of A, and other CPUs take the
// reference kernel.
#include <cstring>
#include <optional>

#include "backends/cpu/conv_weight_packing.h"
#include "backends/cpu/fast_kernels.h"
#include "backends/cpu/qgemm_kernels.h"
#include "backends/cpu/qgemm_panels.h"
#include "core/cpu_isa.h"
#include "ops/requantize.h"

namespace kestrel::backends::cpu {

namespace {

using namespace ops;

void run_reference(KernelContext& ctx) {
  const OpDef* op = find_op(ctx.node.domain, ctx.node.op_type, ctx.node.opset);
  if (!op) ctx.fail("no reference kernel for ", ctx.node.op_type);
  op->run(ctx);
}

bool eight_bit(DType t) { return t == DType::UInt8 || t == DType::Int8; }

const Tensor* optional(const KernelContext& ctx, int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

// The product's view of one node: A as [rows, K] (its leading dimensions
// folded into rows), B as [K, N], and their zero points.
struct Operands {
  int64_t rows = 0, K = 0, N = 0;
  Shape out;
  int32_t a_zero = 0;
  std::vector<int32_t> b_zero;  // one, or one per column
};

// A (input a, zero point az) and B (b, bz) where the kernel takes them:
// 8-bit, B two-dimensional, A's zero point one value, B's one or one per
// column; nullopt otherwise.
std::optional<Operands> read_operands(const KernelContext& ctx, int a, int az, int b, int bz) {
  if (!KESTREL_X86 || !cpu_avx512_vnni()) return std::nullopt;
  const Tensor& A = ctx.input(a);
  const Tensor& B = ctx.input(b);
  if (!eight_bit(A.dtype()) || !eight_bit(B.dtype()) || B.rank() != 2 || A.rank() < 1) return std::nullopt;
  Operands o;
  o.K = A.shape().back();
  o.N = B.dim(1);
  if (B.dim(0) != o.K) return std::nullopt;  // (the reference names the mismatch)
  o.rows = o.K == 0 ? 0 : A.numel() / o.K;
  o.out = A.shape();
  o.out.back() = o.N;
  const Tensor* azt = optional(ctx, az);
  const Tensor* bzt = optional(ctx, bz);
  if (azt && (azt->numel() != 1 || azt->dtype() != A.dtype())) return std::nullopt;
  if (bzt && ((bzt->numel() != 1 && bzt->numel() != o.N) || bzt->dtype() != B.dtype())) return std::nullopt;
  o.a_zero = azt ? int32_t(azt->to_i64()[0]) : 0;
  const std::vector<int64_t> z = bzt ? bzt->to_i64() : std::vector<int64_t>{0};
  o.b_zero.assign(z.begin(), z.end());
  return o;
}

// B's panels: packed at load (the node's kPackedWeightsAttr inputs), else now.
struct Panels {
  QGemmPanels built;
  const int8_t* panels = nullptr;
  const int32_t* col_sums = nullptr;
};

void panels_of(const KernelContext& ctx, int b, const Operands& o, Panels& p) {
  if (ctx.node.has(kPackedWeightsAttr)) {
    const int at = int(ctx.node.attr_i(kPackedWeightsAttr, 0));
    p.panels = ctx.input(at).data<int8_t>();
    p.col_sums = ctx.input(at + 1).data<int32_t>();
    return;
  }
  const Tensor& B = ctx.input(b);
  p.built = B.dtype() == DType::UInt8 ? pack_qgemm_panels(B.data<uint8_t>(), o.K, o.N, 128)
                                      : pack_qgemm_panels(B.data<int8_t>(), o.K, o.N, 0);
  p.panels = p.built.panels.data();
  p.col_sums = p.built.col_sums.data();
}

// The product into e's output. It takes A as u8 bytes U = a (int8 data:
// a + 128), so a - za = U - za' with za' = za (+ 128); and B as s8 bytes
// w' = w - c (c = 128 for uint8 weights, else 0), so w - zb = w' + cb with
// cb = c - zb per column. Then
//   sum (a - za)(w - zb) = sum U w' + cb sum U - za' (sum w' + K cb):
// the last term is each column's constant, and where some cb is not zero
// each row's sum of U joins, times cb.
void run_product(KernelContext& ctx, const Operands& o, int a, int b, qgemm_avx512::QGemmEpilogue e) {
  const Tensor& A = ctx.input(a);
  const bool a_signed = A.dtype() == DType::Int8, b_unsigned = ctx.input(b).dtype() == DType::UInt8;
  const int64_t K4 = qgemm_k4(o.K), lda = K4 * 4;
  const int32_t za = o.a_zero + (a_signed ? 128 : 0), c = b_unsigned ? 128 : 0;
  // A's rows as the product reads them: int8 data shifted, K padded to a
  // multiple of 4 with zeros (whose products are zero: B's padding is zero).
  const uint8_t* U = A.data<uint8_t>();
  std::vector<uint8_t> shifted;
  if (a_signed || lda != o.K) {
    shifted.assign(size_t(o.rows * lda), 0);
    const uint8_t flip = a_signed ? 128 : 0;
    parallel_for(ctx, o.rows, 64, [&](int64_t m) {
      const uint8_t* src = A.data<uint8_t>() + m * o.K;
      uint8_t* dst = shifted.data() + m * lda;
      for (int64_t k = 0; k < o.K; ++k) dst[k] = uint8_t(src[k] ^ flip);
    });
    U = shifted.data();
  }
  Panels p;
  panels_of(ctx, b, o, p);
  std::vector<int32_t> col_add(size_t(o.N)), row_scale(size_t(o.N));
  bool row_term = false;
  for (int64_t n = 0; n < o.N; ++n) {
    const int32_t cb = c - o.b_zero[o.b_zero.size() == 1 ? 0 : size_t(n)];
    row_scale[size_t(n)] = cb;
    row_term = row_term || cb != 0;
    // (bias already in col_add) - za' (sum w' + K cb), exact modulo 2^32
    col_add[size_t(n)] = int32_t(uint32_t(e.col_add ? e.col_add[n] : 0) -
                                 uint32_t(za) * (uint32_t(p.col_sums[n]) + uint32_t(o.K) * uint32_t(cb)));
  }
  std::vector<int32_t> row_sums;
  if (row_term) {
    row_sums.resize(size_t(o.rows));
    parallel_for(ctx, o.rows, 64, [&](int64_t m) {
      int32_t s = 0;
      for (int64_t k = 0; k < o.K; ++k) s += U[m * lda + k];
      row_sums[size_t(m)] = s;
    });
  }
  e.col_add = col_add.data();
  e.row_scale = row_term ? row_scale.data() : nullptr;
  e.row_sums = row_term ? row_sums.data() : nullptr;
  e.ldy = o.N;
  // Tasks of 64 columns by a share of the rows: enough of them for every
  // thread to have several (the rows split where the columns are few).
  constexpr int64_t kCols = 4 * qgemm_avx512::kPanelColumns, kRows = 6;
  const int64_t col_tasks = (o.N + kCols - 1) / kCols, row_blocks = (o.rows + kRows - 1) / kRows;
  const int64_t splits = std::clamp<int64_t>((4 * ctx.threads() + col_tasks - 1) / col_tasks, 1, row_blocks);
  const int64_t rows_per = (row_blocks + splits - 1) / splits * kRows;
#if KESTREL_X86  // (read_operands takes nothing elsewhere)
  parallel_for(ctx, col_tasks * splits, 1, [&](int64_t t) {
    const int64_t n0 = (t % col_tasks) * kCols, m0 = (t / col_tasks) * rows_per;
    const int64_t m1 = std::min(o.rows, m0 + rows_per), n1 = std::min(o.N, n0 + kCols);
    if (m0 < m1) qgemm_avx512::qgemm_u8s8(m0, m1, n0, n1, K4, U, lda, p.panels, e);
  });
#endif
}

// MatMulInteger: a, b, a_zero_point, b_zero_point; int32 out.
void run_matmul_integer_8bit(KernelContext& ctx) {
  const std::optional<Operands> o = read_operands(ctx, 0, 2, 1, 3);
  if (!o) return run_reference(ctx);
  Tensor& Y = ctx.output(0, DType::Int32, o->out);
  if (Y.numel() == 0) return;
  if (o->K == 0) {
    std::memset(Y.data<int32_t>(), 0, size_t(Y.numel()) * 4);
    return;
  }
  qgemm_avx512::QGemmEpilogue e;
  e.y32 = Y.data<int32_t>();
  run_product(ctx, *o, 0, 1, e);
}

// QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point,
// y_scale, y_zero_point; requantized out.
void run_qlinear_matmul_8bit(KernelContext& ctx) {
  const std::optional<Operands> o = read_operands(ctx, 0, 2, 3, 5);
  const Tensor* yz = optional(ctx, 7);
  if (!o || o->K == 0 || ctx.input(1).numel() != 1 || (yz && yz->numel() != 1)) return run_reference(ctx);
  const std::vector<float> as = read_scales(ctx, 1, 1, "a_scale"), bs = read_scales(ctx, 4, o->N, "b_scale"),
                           ys = read_scales(ctx, 6, 1, "y_scale");
  if (ys.size() != 1) return run_reference(ctx);
  std::vector<float> mult(bs.size());
  for (size_t n = 0; n < bs.size(); ++n) mult[n] = as[0] * bs[n] / ys[0];  // (the reference's order)
  Tensor& Y = ctx.output(0, yz ? yz->dtype() : ctx.input(0).dtype(), o->out);
  if (Y.numel() == 0) return;
  qgemm_avx512::QGemmEpilogue e;
  dispatch_q8(ctx, Y.dtype(), [&](auto* tag) {
    using Q = std::remove_pointer_t<decltype(tag)>;
    e.y8 = Y.data<Q>();
    e.y_signed = std::is_same_v<Q, int8_t>;
  });
  e.mult = mult.data();
  e.mult_per_column = mult.size() > 1;
  e.zero_point = yz ? int32_t(yz->to_i64()[0]) : 0;
  run_product(ctx, *o, 0, 3, e);
}

}  // namespace

KESTREL_CPU_KERNEL(MatMulInteger, {.min_opset = 10, .run = run_matmul_integer_8bit});
KESTREL_CPU_KERNEL(QLinearMatMul, {.min_opset = 10, .run = run_qlinear_matmul_8bit});

}  // namespace kestrel::backends::cpu

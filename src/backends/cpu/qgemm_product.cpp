#include "backends/cpu/qgemm_product.h"

#include <algorithm>

#include "backends/cpu/conv_weight_packing.h"
#include "backends/cpu/qgemm_panels.h"
#include "core/cpu_isa.h"

namespace kestrel::backends::cpu {

namespace {

using namespace ops;

// B's panels: packed at load (the node's kPackedWeightsAttr inputs), else now.
struct Panels {
  QGemmPanels built;
  const int8_t* panels = nullptr;
  const int32_t* col_sums = nullptr;
};

void panels_of(const KernelContext& ctx, const QGemmProblem& q, Panels& p) {
  if (ctx.node.has(kPackedWeightsAttr)) {
    const int at = int(ctx.node.attr_i(kPackedWeightsAttr, 0));
    p.panels = ctx.input(at).data<int8_t>();
    p.col_sums = ctx.input(at + 1).data<int32_t>();
    return;
  }
  p.built = q.b_unsigned ? pack_qgemm_panels(q.b, q.K, q.N, 128)
                         : pack_qgemm_panels(reinterpret_cast<const int8_t*>(q.b), q.K, q.N, 0);
  p.panels = p.built.panels.data();
  p.col_sums = p.built.col_sums.data();
}

}  // namespace

bool qgemm_available() { return KESTREL_X86 ? cpu_isa() >= CpuIsa::Avx2 : cpu_arm_dotprod(); }

bool read_zero_points(const Tensor* az, DType a_type, const Tensor* bz, DType b_type, QGemmProblem& q) {
  if ((az && (az->numel() != 1 || az->dtype() != a_type)) ||
      (bz && ((bz->numel() != 1 && bz->numel() != q.N) || bz->dtype() != b_type)))
    return false;
  q.a_zero = az ? int32_t(az->to_i64()[0]) : 0;
  const std::vector<int64_t> z = bz ? bz->to_i64() : std::vector<int64_t>{0};
  q.b_zero.assign(z.begin(), z.end());
  return true;
}

// The product takes A as u8 bytes U = a (int8 data: a + 128), so
// a - za = U - za' with za' = za (+ 128); and B as s8 bytes w' = w - c
// (c = 128 for uint8 weights, else 0), so w - zb = w' + cb with cb = c - zb
// per column. Then
//   sum (a - za)(w - zb) = sum U w' + cb sum U - za' (sum w' + K cb):
// the last term is each column's constant, and where some cb is not zero
// each row's sum of U joins, times cb.
void run_qgemm(KernelContext& ctx, const QGemmProblem& q, QGemmEpilogue e) {
  const int64_t K4 = qgemm_k4(q.K), lda = K4 * 4;
  const int32_t za = q.a_zero + (q.a_signed ? 128 : 0), c = q.b_unsigned ? 128 : 0;
  // A's rows as the product reads them: int8 data shifted, K padded to a
  // multiple of 4 with zeros (whose products are zero: B's padding is zero).
  const uint8_t* U = q.a;
  std::vector<uint8_t> shifted;
  if (q.a_signed || lda != q.K) {
    shifted.assign(size_t(q.rows * lda), 0);
    const uint8_t flip = q.a_signed ? 128 : 0;
    parallel_for(ctx, q.rows, 64, [&](int64_t m) {
      const uint8_t* src = q.a + m * q.K;
      uint8_t* dst = shifted.data() + m * lda;
      for (int64_t k = 0; k < q.K; ++k) dst[k] = uint8_t(src[k] ^ flip);
    });
    U = shifted.data();
  }
  Panels p;
  panels_of(ctx, q, p);
  std::vector<int32_t> col_add(size_t(q.N)), row_scale(size_t(q.N));
  bool row_term = false;
  for (int64_t n = 0; n < q.N; ++n) {
    const int32_t cb = c - q.b_zero[q.b_zero.size() == 1 ? 0 : size_t(n)];
    row_scale[size_t(n)] = cb;
    row_term = row_term || cb != 0;
    // -za' (sum w' + K cb), exact modulo 2^32; SDOT (arm64) takes A as U -
    // 128 (qgemm_kernels.h), so there 128 sum w' joins
    const uint32_t sdot = KESTREL_X86 ? 0u : 128u * uint32_t(p.col_sums[n]);
    col_add[size_t(n)] = int32_t(sdot - uint32_t(za) * (uint32_t(p.col_sums[n]) + uint32_t(q.K) * uint32_t(cb)));
  }
  std::vector<int32_t> row_sums;
  if (row_term) {
    row_sums.resize(size_t(q.rows));
    parallel_for(ctx, q.rows, 64, [&](int64_t m) {
      int32_t s = 0;
      for (int64_t k = 0; k < q.K; ++k) s += U[m * lda + k];
      row_sums[size_t(m)] = s;
    });
  }
  e.col_add = col_add.data();
  e.row_scale = row_term ? row_scale.data() : nullptr;
  e.row_sums = row_term ? row_sums.data() : nullptr;
  e.ldy = q.N;
  // On AVX2 the product takes A widened to int16 (qgemm_kernels.h).
  const bool vnni = cpu_avx512_vnni();
  std::vector<int16_t> widened;
  if (KESTREL_X86 && !vnni) {
    widened.resize(size_t(q.rows * lda));
    parallel_for(ctx, q.rows, 64, [&](int64_t m) {
      for (int64_t k = 0; k < lda; ++k) widened[size_t(m * lda + k)] = int16_t(U[m * lda + k]);
    });
  }
  // Tasks of 64 columns by a share of the rows (a multiple of both levels'
  // blocks, 6 and 4): enough of them for every thread to have several (the
  // rows split where the columns are few).
  constexpr int64_t kCols = 4 * kPanelColumns, kRows = 12;
  const int64_t col_tasks = (q.N + kCols - 1) / kCols, row_blocks = (q.rows + kRows - 1) / kRows;
  const int64_t splits = std::clamp<int64_t>((4 * ctx.threads() + col_tasks - 1) / col_tasks, 1, row_blocks);
  const int64_t rows_per = (row_blocks + splits - 1) / splits * kRows;
  parallel_for(ctx, col_tasks * splits, 1, [&](int64_t t) {
    const int64_t n0 = (t % col_tasks) * kCols, m0 = (t / col_tasks) * rows_per;
    const int64_t m1 = std::min(q.rows, m0 + rows_per), n1 = std::min(q.N, n0 + kCols);
    if (m0 >= m1) return;
#if KESTREL_X86
    if (vnni)
      qgemm_avx512::qgemm_u8s8(m0, m1, n0, n1, K4, U, lda, p.panels, e);
    else
      qgemm_avx2::qgemm_u8s8(m0, m1, n0, n1, K4, widened.data(), lda, p.panels, e);
#elif defined(__aarch64__)  // (qgemm_available(): the CPU has the dot product)
    qgemm_neon::qgemm_u8s8(m0, m1, n0, n1, K4, U, lda, p.panels, e);
#endif
  });
}

}  // namespace kestrel::backends::cpu

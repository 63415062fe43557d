#include "backends/vulkan/ops/integer_product.h"

namespace kestrel::vulkan {
namespace {

// A product of fewer 128x128 output tiles than this takes the 64x64 int8
// tile, as the float tensor-core GEMM chooses (gemm_record.cpp).
constexpr uint64_t kLargeTilesAtLeast = 256;

// Whether an operand's 16 consecutive bytes along its unit-stride index load
// as one 16-byte word: that index has unit stride and a length and the other
// index's stride that are multiples of 16, from a 16-byte aligned binding.
bool rows_of_16(const GpuTensor& t, bool contiguous, uint32_t unit_stride, uint32_t length, uint32_t row_stride) {
  return contiguous && unit_stride == 1 && length % 16 == 0 && row_stride % 16 == 0 && t.range(false).offset % 16 == 0;
}

}  // namespace

bool int8_coop_product(const OpContext& ctx, const GemmPlan& plan) {
  if (!ctx.device().coop_matrix_int8 || plan.batches != 1) return false;
  for (int d = 0; d < 4; ++d)
    if (plan.p.sab[d] || plan.p.sbb[d]) return false;
  return true;
}

void record_int8_coop_product(OpContext& ctx, const GemmPlan& plan, const GpuTensor& A, const GpuTensor* az,
                              int32_t a_zp, const GpuTensor& B, const GpuTensor* bz, int32_t b_zp,
                              const GpuTensor& Y) {
  const GemmPush& p = plan.p;
  const bool a_signed = A.dtype == DType::Int8, b_signed = B.dtype == DType::Int8;
  GpuTensor sums = ctx.temp_words(size_t(p.M) + p.N);
  // A's row sums weigh B's shifted zero point, nonzero for uint8 B or a
  // zero point given; B's column sums likewise A's.
  // (integer_sums.comp's KPART: B's column sums in parts of 256 rows.)
  const uint32_t parts = std::max<uint32_t>(1, (p.K + 255) / 256);
  if (!b_signed || b_zp != 0) {
    const uint32_t gx = std::min<uint32_t>(p.M, 65535), gy = (p.M + gx - 1) / gx;
    ctx.dispatch("integer_sums", {0, a_signed}, {In(A), In(B), Out(sums), Out(sums)}, &p, sizeof p, gx, gy, 1);
  }
  if (!a_signed || a_zp != 0) {
    if (parts > 65535) ctx.unsupported("K = ", p.K, " is past the column sums' 65535 parts");
    GpuTensor part = ctx.temp_words(size_t(parts) * p.N);
    ctx.dispatch("integer_sums", {1, b_signed}, {In(A), In(B), In(sums), Out(part)}, &p, sizeof p, (p.N + 63) / 64,
                 parts, 1);
    ctx.dispatch("integer_sums", {2, b_signed}, {In(A), In(B), Out(sums), In(part)}, &p, sizeof p, (p.N + 63) / 64, 1,
                 1);
  }
  GemmTiles t = ctx.gemm_tiles();
  if (t == GemmTiles::Auto)
    t = uint64_t((p.M + 127) / 128) * ((p.N + 127) / 128) >= kLargeTilesAtLeast ? GemmTiles::Large : GemmTiles::Small;
  const bool large = t == GemmTiles::Large || t == GemmTiles::Wide;
  const bool a_vec = rows_of_16(A, plan.a_kcontig, p.sak, p.K, p.sam);
  const bool b_vec = rows_of_16(B, plan.b_ncontig, p.sbn, p.N, p.sbk);
  const bool y_vec = p.N % 4 == 0 && Y.range(false).offset % 16 == 0;
  record_gemm_tiles(ctx, large ? "gemm_integer_coop" : "gemm_integer_coop_small",
                    {a_signed, b_signed, a_zp, b_zp, plan.a_kcontig, plan.b_ncontig, a_vec, b_vec, y_vec},
                    {In(A), In(B), In(sums), Out(Y), In(az ? *az : A), In(bz ? *bz : B)}, plan, large ? 128 : 64,
                    large ? 128 : 64);
}

}  // namespace kestrel::vulkan

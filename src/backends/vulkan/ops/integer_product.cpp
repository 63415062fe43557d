#include "backends/vulkan/ops/integer_product.h"

#include <algorithm>

#include "backends/vulkan/ops/requantize.h"

namespace kestrel::vulkan {
namespace {

// A product of fewer 128x128 output tiles than this takes the 64x64 int8
// tile, as the float tensor-core GEMM chooses (gemm_record.cpp).
constexpr uint64_t kLargeTilesAtLeast = 256;

// Whether an operand's `bytes` consecutive elements along one index load as
// one aligned word: that index has unit stride (`contiguous`, `stride` 1),
// its length and the other index's stride are multiples of `bytes`, and the
// binding starts aligned to it.
bool aligned_runs(const GpuTensor& t, uint32_t bytes, bool contiguous, uint32_t stride, uint32_t length,
                  uint32_t other_stride) {
  return contiguous && stride == 1 && length % bytes == 0 && other_stride % bytes == 0 &&
         t.range(false).offset % bytes == 0;
}

// The kernel an integer product takes: the int8 tensor cores, packed int8
// dot products, or plain integer arithmetic (gemm_integer.comp, which also
// takes what the others do not: several batches, B batched).
enum class IntegerKernel { TensorCores, DotProducts, Plain };

IntegerKernel integer_kernel(const OpContext& ctx, const GemmPlan& plan) {
  bool one_matrix = plan.batches == 1;
  for (int d = 0; d < 4; ++d) one_matrix = one_matrix && !plan.p.sab[d] && !plan.p.sbb[d];
  if (!one_matrix) return IntegerKernel::Plain;
  if (ctx.device().coop_matrix_int8) return IntegerKernel::TensorCores;
  const IntegerDot dot = ctx.integer_dot();
  if (ctx.device().integer_dot_product &&
      (dot == IntegerDot::On || (dot == IntegerDot::Auto && ctx.device().integer_dot_product_accelerated)))
    return IntegerKernel::DotProducts;
  return IntegerKernel::Plain;
}

// Whether the shifted kernels' epilogue (integer_product_interface.glsl) can
// finish the sums into Y: 8-bit outputs go out as whole words (N a multiple
// of 4) with one multiplier or one per column.
bool finished_in_epilogue(const IntegerFinish& f, uint32_t N) {
  if (f.kind != IntegerFinish::Kind::Requantize) return true;
  return N % 4 == 0 && (f.mult.dim == 0 || (f.mult.inner == 1 && f.mult.dim == N));
}

// The product on shifted int8 operands (the tensor cores' or the dot
// products' kernel), into Y finished as `f` says: the operands' row and
// column sums its zero points need (integer_sums.comp), then the kernel.
void record_shifted_product(OpContext& ctx, IntegerKernel kernel, const GemmPlan& plan, const GpuTensor& A,
                            const GpuTensor* az, int32_t a_zp, const GpuTensor& B, const GpuTensor* bz, int32_t b_zp,
                            const GpuTensor& Y, const IntegerFinish& f) {
  const GemmPush& p = plan.p;
  const bool a_signed = A.dtype == DType::Int8, b_signed = B.dtype == DType::Int8;
  GpuTensor sums = ctx.temp_words(size_t(p.M) + p.N);
  // A's row sums weigh B's shifted zero point, nonzero for uint8 B or a
  // zero point given; B's column sums likewise A's.
  if (!b_signed || b_zp != 0) {
    const uint32_t gx = std::min<uint32_t>(p.M, 65535), gy = (p.M + gx - 1) / gx;
    ctx.dispatch("integer_sums", {0, a_signed}, {In(A), In(B), Out(sums), Out(sums)}, &p, sizeof p, gx, gy, 1);
  }
  if (!a_signed || a_zp != 0) {
    // (integer_sums.comp's KPART: B's column sums in parts of 256 rows.)
    const uint32_t parts = std::max<uint32_t>(1, (p.K + 255) / 256);
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
  const bool coop = kernel == IntegerKernel::TensorCores, large = coop && (t == GemmTiles::Large || t == GemmTiles::Wide);
  // Wide loads: 16 bytes along the unit-stride index on tensor cores; 4
  // consecutive k as one word for the dot products.
  const bool a_vec = aligned_runs(A, coop ? 16 : 4, plan.a_kcontig, p.sak, p.K, p.sam);
  const bool b_vec = coop ? aligned_runs(B, 16, plan.b_ncontig, p.sbn, p.N, p.sbk)
                          : aligned_runs(B, 4, !plan.b_ncontig, p.sbk, p.K, p.sbn);
  // 32-bit outputs 16 bytes at a time (8-bit ones go out a word at a time).
  const bool y_vec = p.N % 4 == 0 && Y.range(false).offset % 16 == 0;
  using K = IntegerFinish::Kind;
  // The epilogue's parameters: multipliers, or a_scale and b_scale, and the bias.
  GpuTensor first = sums, second = sums;
  bool per_column = false;
  GemmPlan fp = plan;
  if (f.kind == K::Requantize) {
    first = ctx.upload_f32(f.mult.values);
    per_column = f.mult.dim != 0;
    fp.p.beta = float(f.y_zero);  // (unused by the integer kernels' GEMM: the output zero point)
  } else if (f.kind == K::Dequantize) {
    first = *f.a_scale;
    second = ctx.upload_f32(f.b_scale);
    per_column = f.b_scale.size() > 1;
  }
  const int32_t out = f.kind == K::Sums ? 0 : f.kind == K::Requantize ? 1 : 2;
  const uint32_t tile = large ? 128 : 64;
  record_gemm_tiles(ctx, !coop ? "gemm_integer_dot" : large ? "gemm_integer_coop" : "gemm_integer_coop_small",
                    {a_signed, b_signed, a_zp, b_zp, plan.a_kcontig, plan.b_ncontig, a_vec, b_vec, y_vec, out,
                     per_column, f.bias != nullptr, Y.dtype == DType::Int8},
                    {In(A), In(B), In(sums), Out(Y), In(az ? *az : A), In(bz ? *bz : B), In(first), In(second),
                     In(f.bias ? *f.bias : sums)},
                    fp, tile, tile);
}

}  // namespace

const GpuTensor* host_weight_zero_point(OpContext& ctx, int at, DType weight_type, GpuTensor& storage) {
  if (!ctx.has_input(at)) return nullptr;
  const Tensor& z = ctx.host_input(at);
  const std::vector<int64_t> v = z.to_i64();
  if (weight_type == DType::Int8 && z.dtype() == DType::Int8 &&
      std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 0; }))
    return nullptr;
  std::vector<int32_t> words((v.size() + 3) / 4, 0);
  for (size_t i = 0; i < v.size(); ++i) words[i / 4] |= int32_t(uint32_t(v[i] & 0xff) << (8 * (i % 4)));
  storage = ctx.upload_i32(words);
  storage.dtype = z.dtype();
  storage.shape = z.shape();
  return &storage;
}

void record_finished_product(OpContext& ctx, const GemmPlan& plan, const GpuTensor& A, const GpuTensor* az,
                             int32_t a_zp, const GpuTensor& B, const GpuTensor* bz, int32_t b_zp, const GpuTensor& Y,
                             const IntegerFinish& f) {
  using K = IntegerFinish::Kind;
  const IntegerKernel kernel = integer_kernel(ctx, plan);
  if (kernel != IntegerKernel::Plain && finished_in_epilogue(f, plan.p.N))
    return record_shifted_product(ctx, kernel, plan, A, az, a_zp, B, bz, b_zp, Y, f);
  GpuTensor acc = Y;
  if (f.kind != K::Sums) acc = ctx.temp_words(size_t(Y.numel()));
  if (kernel != IntegerKernel::Plain)
    record_shifted_product(ctx, kernel, plan, A, az, a_zp, B, bz, b_zp, acc, IntegerFinish{});
  else
    record_gemm_tiles(ctx, "gemm_integer", {A.dtype == DType::Int8, B.dtype == DType::Int8, a_zp, b_zp},
                      {In(A), In(B), In(az ? *az : A), Out(acc), In(bz ? *bz : B)}, plan, 64, 64);
  if (f.kind == K::Requantize) {
    record_requantize(ctx, acc, f.mult, nullptr, 1, 0, f.y_zero, Y);
  } else if (f.kind == K::Dequantize) {
    const GpuTensor bs = ctx.upload_f32(f.b_scale);  // float32: the ops are float32 nodes
    struct {
      uint32_t base, n, columns;
    } p{0, 0, plan.p.N};
    ctx.dispatch_elements("dequantize_product", {f.bias != nullptr, f.b_scale.size() > 1},
                          {In(acc), In(*f.a_scale), In(bs), In(f.bias ? *f.bias : acc), Out(Y)}, &p, sizeof p,
                          uint64_t(Y.numel()));
  }
}

}  // namespace kestrel::vulkan

#include "backends/vulkan/ops/gemm_record.h"

#include <algorithm>
#include <string>

namespace kestrel::vulkan {
namespace {

// Multiply-adds per dispatch: ~2 GFLOP, tens of ms on a phone GPU, a fraction
// of a millisecond on a desktop one (macs_per_dispatch scales it per device).
constexpr uint64_t kMacsPerDispatch = uint64_t(1) << 30;

// The kernel a GEMM records, and its output tile, rows x columns (the grid
// is sized by it).
struct GemmKernel {
  const char* shader;
  uint32_t tile_m, tile_n;
  bool coop;
};

// A GEMM of fewer 128x128 output tiles than this leaves a large GPU's compute
// units idle on the larger tile: measured on the H200 (132 compute units,
// BENCHMARKS.md), CLIP's 197-token projections (12 large tiles) ran 2x slower
// on gemm_large.comp than on gemm.comp, the 4096x4096 product (1,024) 1.4x faster.
constexpr uint64_t kLargeTilesAtLeast = 256;
// Likewise on tensor cores, a GEMM of fewer 64x64 tiles than this takes the
// 32x32 one: CLIP's batch-1 output projection, second MLP layer and
// attention context are 48 64x64 tiles each (its QKV and first MLP layer 144
// and 192). Measured on the H200 against the 64x64 tile forced (BENCHMARKS.md):
// with the bound at 256, CLIP at batch 1 gained 4-8% and DINOv2 518, whose
// 384-wide products are 132 tiles, lost 3-6%, of which about 2% is not this
// tile's (its scores on the 128x128 one: the loss at 128, where it takes no
// 32x32 tile); at 128, CLIP gained 1-6%.
constexpr uint64_t kSmallTilesAtLeast = 128;
// Products of at most this many columns take the 32x32 tensor-core tile
// however many tiles they make: on a wider one most of each tile is past N
// (SAM ViT-B's windowed relative-position products, N = 27, in batches of
// 300, took the 128x128 one by the tile count).
constexpr uint32_t kTinyColumnsAtMost = 32;

GemmKernel choose_kernel(const OpContext& ctx, const GemmPlan& plan) {
  // Float16 runs on a device whose cooperative matrices the context enabled
  // use its tensor cores. Float32 runs never do: their products would round
  // the operands to float16.
  const bool coop = ctx.half() && ctx.device().coop_matrix_fp16;
  GemmTiles t = ctx.gemm_tiles();
  if (t == GemmTiles::Auto) {
    const auto tiles = [&](uint32_t rows, uint32_t cols) {
      return uint64_t((plan.p.M + rows - 1) / rows) * ((plan.p.N + cols - 1) / cols) * plan.batches;
    };
    const bool big_gpu = ctx.device().type == "discrete" || ctx.device().coop_matrix_fp16;
    t = coop && plan.p.N <= kTinyColumnsAtMost           ? GemmTiles::Tiny
        : big_gpu && tiles(128, 128) >= kLargeTilesAtLeast ? GemmTiles::Large
        : coop && tiles(128, 96) >= kLargeTilesAtLeast     ? GemmTiles::Wide
        : coop && tiles(64, 64) < kSmallTilesAtLeast       ? GemmTiles::Tiny
                                                           : GemmTiles::Small;
  }
  if (coop)
    return t == GemmTiles::Large  ? GemmKernel{"gemm_coop", 128, 128, true}
           : t == GemmTiles::Wide ? GemmKernel{"gemm_coop_wide", 128, 96, true}
           : t == GemmTiles::Tiny ? GemmKernel{"gemm_coop_tiny", 32, 32, true}
                                  : GemmKernel{"gemm_coop_small", 64, 64, true};
  return t == GemmTiles::Large || t == GemmTiles::Wide ? GemmKernel{"gemm_large", 128, 128, false}
                                                       : GemmKernel{"gemm", 64, 64, false};
}

// Whether the tensor-core GEMM may read an operand 8 halves (16 bytes) at a time:
// its binding starts 16-byte aligned, and every row along its unit-stride
// index starts at a multiple of 8 elements and holds a multiple of 8 (so a
// load never straddles the row's end). `contig_len`: the unit-stride extent
// (K or M for A, N or K for B); `row_stride`: the other index's stride;
// `batch`: the batch strides.
bool vector_rows(const GpuTensor& t, uint32_t unit_stride, uint32_t contig_len, uint32_t row_stride,
                 const uint32_t (&batch)[4]) {
  if (unit_stride != 1 || contig_len % 8 || row_stride % 8 || t.range(false).offset % 16) return false;
  for (uint32_t s : batch)
    if (s % 8) return false;
  return true;
}

// Whether the tensor-core GEMM may store Y (and read the residual) 8
// outputs at a time: both bindings 16-byte aligned, and every output row
// (and batch) starting at a multiple of 8 elements with N a multiple of 8, so
// a lane's 8 outputs never straddle a row's end; or rows padded to a
// multiple of 8 with scratch (GemmPlan::y_row_scratch), where a lane's last
// group crosses N into the padding.
bool vector_outputs(const GemmPlan& plan, const GpuTensor& y, const GpuTensor* residual) {
  const GemmPush& p = plan.p;
  // Padded rows whose padding is scratch take the groups that cross N.
  const bool across_n = plan.y_row_scratch && p.sym >= (p.N + 7) / 8 * 8 && !plan.has_c && !residual;
  if ((p.N % 8 && !across_n) || y.range(false).offset % 16 || (residual && residual->range(false).offset % 16))
    return false;
  if (p.sym == 0) return true;  // dense rows of N, batches of M x N
  if (p.sym % 8) return false;
  for (uint32_t s : p.syb)
    if (s % 8) return false;
  return true;
}

}  // namespace

void record_gemm(OpContext& ctx, GemmPlan plan, const GpuTensor& a, const GpuTensor& b, const GpuTensor* c,
                 const GpuTensor& y, ActParams act, const GpuTensor* residual) {
  GemmPush& p = plan.p;
  if (y.numel() == 0 || p.M == 0 || p.N == 0) return;
  const GemmKernel kernel = choose_kernel(ctx, plan);
  if (plan.nbits && (plan.y_float32 || plan.b_ncontig)) ctx.fail("4-bit weights are k-major and write the run's storage");
  const std::string shader = std::string(kernel.shader) + (plan.nbits                     ? "_nbits"
                                                           : plan.y_float32 && ctx.half() ? "_stream32"
                                                                                          : "");
  p.act_a = act.a;
  p.act_b = act.b;
  std::vector<int32_t> spec = {int32_t(act.act), plan.a_kcontig ? 1 : 0, plan.b_ncontig ? 1 : 0, plan.has_c ? 1 : 0,
                               residual ? 1 : 0};
  if (kernel.coop) {
    spec.push_back(plan.a_kcontig ? vector_rows(a, p.sak, p.K, p.sam, p.sab) : vector_rows(a, p.sam, p.M, p.sak, p.sab));
    spec.push_back(!plan.nbits && (plan.b_ncontig ? vector_rows(b, p.sbn, p.N, p.sbk, p.sbb)
                                                  : vector_rows(b, p.sbk, p.K, p.sbn, p.sbb)));
    spec.push_back(vector_outputs(plan, y, residual));
  }
  std::vector<Binding> bind = {In(a), In(b), In(c ? *c : a), Out(y), In(residual ? *residual : a)};
  if (plan.nbits) bind_nbits_weights(*plan.nbits, b, spec, bind);
  record_gemm_tiles(ctx, shader, spec, bind, plan, kernel.tile_m, kernel.tile_n);
}

void bind_nbits_weights(const NbitsWeights& w, const GpuTensor& packed, std::vector<int32_t>& spec,
                        std::vector<Binding>& bind) {
  spec.resize(8, 0);
  spec.push_back(int32_t(w.block));
  spec.push_back(w.zero_points ? 1 : 0);
  bind.resize(5, In(packed));
  bind.push_back(In(*w.scales));
  bind.push_back(In(w.zero_points ? *w.zero_points : packed));
}

void record_gemm_tiles(OpContext& ctx, const std::string& shader, const std::vector<int32_t>& spec,
                       const std::vector<Binding>& bind, GemmPlan plan, uint32_t tile_m, uint32_t tile_n) {
  GemmPush& p = plan.p;
  const uint32_t max_groups = 65535;
  uint64_t nt = (p.N + tile_n - 1) / tile_n, mt = (p.M + tile_m - 1) / tile_m;
  if (nt > max_groups) ctx.unsupported("N = ", p.N, " needs more than 65535 column tiles");
  uint64_t tile_macs = uint64_t(tile_m) * tile_n * std::max<uint32_t>(p.K, 1);
  uint64_t batch_macs = tile_macs * mt * nt;
  const uint64_t macs = macs_per_dispatch(ctx.device(), kMacsPerDispatch);
  if (batch_macs <= macs) {
    uint64_t per = std::clamp<uint64_t>(macs / batch_macs, 1, max_groups);
    for (uint64_t b0 = 0; b0 < plan.batches; b0 += per) {
      p.batch_base = uint32_t(b0);
      p.mtile_base = 0;
      ctx.dispatch(shader, spec, bind, &p, sizeof p, uint32_t(nt), uint32_t(mt),
                   uint32_t(std::min(per, plan.batches - b0)));
    }
    return;
  }
  uint64_t rows = std::clamp<uint64_t>(macs / (tile_macs * nt), 1, max_groups);
  for (uint64_t b0 = 0; b0 < plan.batches; ++b0)
    for (uint64_t m0 = 0; m0 < mt; m0 += rows) {
      p.batch_base = uint32_t(b0);
      p.mtile_base = uint32_t(m0);
      ctx.dispatch(shader, spec, bind, &p, sizeof p, uint32_t(nt), uint32_t(std::min(rows, mt - m0)), 1);
    }
}

GemmPlan plan_matmul(OpContext& ctx, const Shape& a_shape, const Shape& b_shape, Shape& out, bool stack) {
  if (a_shape.empty() || b_shape.empty())
    ctx.fail("operands must have rank >= 1, got ", shape_str(a_shape), " and ", shape_str(b_shape));
  Shape a = a_shape, b = b_shape;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  if (b[b.size() - 2] != K) ctx.fail("inner dimensions differ: ", shape_str(a_shape), " x ", shape_str(b_shape));
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape batch = broadcast_pair(ctx, ab, bb);
  if (batch.size() > 4) ctx.unsupported("more than 4 batch dims");
  out = batch;
  if (a_shape.size() > 1) out.push_back(M);
  if (b_shape.size() > 1) out.push_back(N);

  GemmPlan plan;
  GemmPush& p = plan.p;
  init_batch(p);
  p.K = uint32_t(K), p.N = uint32_t(N);
  p.alpha = 1;
  p.sam = uint32_t(K), p.sak = 1, p.sbk = uint32_t(N), p.sbn = 1;
  bool b_shared = std::all_of(bb.begin(), bb.end(), [](int64_t d) { return d == 1; });
  if (stack && b_shared && ab == batch) {
    p.M = uint32_t(shape_numel(batch) * M);
    return plan;
  }
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
  return plan;
}

}  // namespace kestrel::vulkan

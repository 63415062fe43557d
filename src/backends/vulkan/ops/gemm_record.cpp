#include "backends/vulkan/ops/gemm_record.h"

#include <algorithm>

namespace kestrel::vulkan {
namespace {

constexpr uint32_t kTile = 64, kCoopTile = 128;  // gemm.comp's and gemm_coop.comp's output tiles
// Multiply-adds per dispatch: ~2 GFLOP, tens of ms on a phone GPU, a fraction
// of a millisecond on a desktop one.
constexpr uint64_t kMacsPerDispatch = uint64_t(1) << 30;

}  // namespace

void record_gemm(OpContext& ctx, GemmPlan plan, const GpuTensor& a, const GpuTensor& b, const GpuTensor* c,
                 const GpuTensor& y, ActParams act, const GpuTensor* residual) {
  GemmPush& p = plan.p;
  if (y.numel() == 0 || p.M == 0 || p.N == 0) return;
  const uint32_t max_groups = 65535;
  // Float16 runs on a device whose cooperative matrices the context enabled
  // (KESTREL_COOPMAT=on) use its tensor cores (gemm_coop.comp: the same push
  // constants and bindings, larger tiles).
  const bool coop = ctx.half() && ctx.device().coop_matrix_fp16;
  const char* shader = coop ? "gemm_coop" : "gemm";
  const uint32_t tile = coop ? kCoopTile : kTile;
  uint64_t nt = (p.N + tile - 1) / tile, mt = (p.M + tile - 1) / tile;
  if (nt > max_groups) ctx.unsupported("N = ", p.N, " needs more than 65535 column tiles");
  p.act_a = act.a;
  p.act_b = act.b;
  std::vector<int32_t> spec = {int32_t(act.act), plan.a_kcontig ? 1 : 0, plan.b_ncontig ? 1 : 0, plan.has_c ? 1 : 0,
                               residual ? 1 : 0};
  std::vector<Binding> bind = {In(a), In(b), In(c ? *c : a), Out(y), In(residual ? *residual : a)};
  uint64_t tile_macs = uint64_t(tile) * tile * std::max<uint32_t>(p.K, 1);
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


}  // namespace kestrel::vulkan

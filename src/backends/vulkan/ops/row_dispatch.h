// One workgroup per row (Softmax, the normalizations, reductions), recorded
// in bounded dispatches. The shader's push constants begin with
// {uint row_base; uint row_end;} and it handles the rows
// row_base + kestrel_row() below row_end (the grid may overshoot).
#pragma once
#include <algorithm>
#include <cstring>
#include <string>

#include "backends/vulkan/op.h"
#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {

// `row_cost` is the elements a row reads: each dispatch covers about 2^24 of
// them (a few ms on a phone GPU), scaled per device as macs_per_dispatch
// scales a GEMM's (32 times on a discrete GPU: the dispatches write one
// output, a barrier between each), and at least one row.
inline void dispatch_rows(OpContext& ctx, const std::string& shader, const std::vector<int32_t>& spec,
                          const std::vector<Binding>& bindings, void* push, uint32_t push_bytes, uint64_t rows,
                          uint64_t row_cost) {
  const uint64_t budget = macs_per_dispatch(ctx.device(), uint64_t(1) << 24);
  uint64_t per = std::max<uint64_t>(1, budget / std::max<uint64_t>(row_cost, 1));
  uint32_t max_x = ctx.device().max_workgroup_count[0];
  per = std::min<uint64_t>(per, uint64_t(max_x) * 65535);
  for (uint64_t r0 = 0; r0 < rows; r0 += per) {
    uint64_t r1 = std::min(rows, r0 + per);
    uint32_t head[2] = {uint32_t(r0), uint32_t(r1)};
    std::memcpy(push, head, sizeof head);
    uint32_t gx, gy;
    grid_for(r1 - r0, max_x, gx, gy);
    ctx.dispatch(shader, spec, bindings, push, push_bytes, gx, gy, 1);
  }
}

// norm_rows.comp holds a row of up to this many elements in registers (its
// ROW_HELD). Such rows take its sg variants where the device has subgroup
// arithmetic: 32 threads a row and no barrier tree.
constexpr int64_t kNormRowHeld = 1024;
inline std::string norm_rows_shader(const OpContext& ctx, int64_t n, bool stream32) {
  const bool sg = n <= kNormRowHeld && ctx.device().subgroup_arithmetic;
  if (stream32) return sg ? "norm_rows_stream32sg" : "norm_rows_stream32";
  return sg ? "norm_rows_sg" : "norm_rows";
}

}  // namespace kestrel::vulkan

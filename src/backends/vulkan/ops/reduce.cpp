// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceLogSum, ReduceLogSumExp, ReduceSumSquare (shaders/reduce.comp).
#include <algorithm>

#include "backends/vulkan/ops/row_dispatch.h"
#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {
namespace {

struct ReducePush {
  uint32_t row_base, row_end, groups, count;
  uint32_t kdims[3], kstrides[3], rdims[3], rstrides[3];
};

enum Op { Sum = 0, Mean = 1, Max = 2, Min = 3, Prod = 4, L2 = 5, SumSq = 6, Lse = 7, L1 = 8, LogSum = 9 };

// Reads the axes: the attribute before `input_from` (13 for ReduceSum, 18 for
// the rest), input 1 from then on. Sets *noop for noop_with_empty_axes.
std::vector<int64_t> reduce_axes(const OpContext& ctx, int input_from, bool* noop) {
  *noop = false;
  if (ctx.node.opset < input_from) return ctx.node.attr_ints("axes");
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) axes = ctx.host_input(1).to_i64();
  if (axes.empty() && ctx.node.attr_i("noop_with_empty_axes", 0)) *noop = true;
  return axes;
}

template <int OP, int INPUT_FROM>
void reduce(OpContext& ctx) {
  require_float(ctx, {0});
  const GpuTensor& x = ctx.input(0);
  bool noop = false;
  std::vector<int64_t> axes = reduce_axes(ctx, INPUT_FROM, &noop);
  if (noop) return ctx.set_output(0, x);
  int rank = int(x.shape.size());
  std::vector<bool> mask(size_t(rank), axes.empty());
  for (int64_t a : axes) {
    int k = norm_axis(ctx, a, rank);
    if (mask[size_t(k)]) ctx.fail("axis ", a, " is listed twice");
    mask[size_t(k)] = true;
  }
  Shape keep, drop;
  for (int i = 0; i < rank; ++i) {
    keep.push_back(mask[size_t(i)] ? 1 : x.shape[size_t(i)]);
    if (!mask[size_t(i)]) drop.push_back(x.shape[size_t(i)]);
  }
  if (x.numel() == 0) ctx.unsupported("empty input (a reduction of nothing)");
  // Merge adjacent dims of the same role (size-1 dims change nothing), innermost first.
  struct Run { bool red; int64_t size, stride; };
  std::vector<Run> runs;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    int64_t d = x.shape[size_t(i)];
    if (d != 1) {
      bool red = mask[size_t(i)];
      if (!runs.empty() && runs.back().red == red) runs.back().size *= d;
      else runs.push_back({red, d, stride});
    }
    stride *= d;
  }
  ReducePush p{};
  for (int d = 0; d < 3; ++d) p.kdims[d] = p.rdims[d] = 1;
  int nk = 0, nr = 0;
  int64_t groups = 1, count = 1;
  for (const Run& r : runs) {  // innermost first: fill the arrays from the right
    int& n = r.red ? nr : nk;
    if (n == 3) ctx.unsupported("more than 3 separate runs of ", r.red ? "reduced" : "kept", " dims");
    (r.red ? p.rdims : p.kdims)[2 - n] = uint32_t(r.size);
    (r.red ? p.rstrides : p.kstrides)[2 - n] = uint32_t(r.stride);
    ++n;
    (r.red ? count : groups) *= r.size;
  }
  p.groups = uint32_t(groups);
  p.count = uint32_t(count);
  bool innermost_reduced = !runs.empty() && runs.front().red;
  // One thread per output when the reductions are short, or when the kept
  // dims are innermost (neighbouring outputs read neighbouring elements)
  // and there are enough outputs to fill the device.
  bool per_thread = count <= 16 || (!innermost_reduced && groups >= 1024);
  const uint64_t wg = 256;  // shaders/reduce.comp's local size
  GpuTensor& y = ctx.output(0, x.dtype, ctx.node.attr_i("keepdims", 1) ? keep : drop);
  uint64_t rows = per_thread ? (uint64_t(groups) + wg - 1) / wg : uint64_t(groups);
  dispatch_rows(ctx, "reduce", {OP, per_thread ? 1 : 0, nr <= 1 ? 1 : 0}, {In(x), Out(y)}, &p, sizeof p, rows,
                uint64_t(count) * (per_thread ? wg : 1));
}

}  // namespace

KESTREL_VK_OP(ReduceSum, {.record = reduce<Sum, 13>, .host_inputs = {1}});
KESTREL_VK_OP(ReduceMean, {.record = reduce<Mean, 18>, .host_inputs = {1}});
KESTREL_VK_OP(ReduceMax, {.record = reduce<Max, 18>, .host_inputs = {1}});
KESTREL_VK_OP(ReduceMin, {.record = reduce<Min, 18>, .host_inputs = {1}});
KESTREL_VK_OP(ReduceProd, {.record = reduce<Prod, 18>, .host_inputs = {1}});
KESTREL_VK_OP(ReduceL1, {.record = reduce<L1, 18>, .host_inputs = {1}});
KESTREL_VK_OP(ReduceL2, {.record = reduce<L2, 18>, .host_inputs = {1}});
KESTREL_VK_OP(ReduceLogSum, {.record = reduce<LogSum, 18>, .host_inputs = {1}});
KESTREL_VK_OP(ReduceLogSumExp, {.record = reduce<Lse, 18>, .host_inputs = {1}});
KESTREL_VK_OP(ReduceSumSquare, {.record = reduce<SumSq, 18>, .host_inputs = {1}});

}  // namespace kestrel::vulkan

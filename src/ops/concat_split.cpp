// Concat and Split along one axis: both are row copies of contiguous blocks.
#include <cstring>
#include <utility>
#include <vector>

#include "ops/movement.h"
#include "ops/split_util.h"

namespace kestrel::ops {
namespace {

void run_concat(KernelContext& ctx) {
  const Tensor& first = ctx.input(0);
  int r = first.rank();
  if (!ctx.node.has("axis")) ctx.fail("the axis attribute is required");
  int axis = normalize_axis(ctx, ctx.node.attr_i("axis", 0), r);
  Shape out = first.shape();
  out[size_t(axis)] = 0;
  std::vector<const Tensor*> ins;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    if (t.dtype() != first.dtype())
      ctx.fail("input ", i, " is ", dtype_name(t.dtype()), " but input 0 is ", dtype_name(first.dtype()));
    bool ok = t.rank() == r;
    for (int k = 0; ok && k < r; ++k) ok = k == axis || t.shape()[size_t(k)] == first.shape()[size_t(k)];
    if (!ok)
      ctx.fail("input ", i, " ", shape_str(t.shape()), " does not match input 0 ", shape_str(first.shape()),
               " outside axis ", axis);
    if (!add_fits(out[size_t(axis)], t.shape()[size_t(axis)], out[size_t(axis)]))
      ctx.fail("the inputs' sizes along axis ", axis, " add up to more than int64 holds (it overflows)");
    ins.push_back(&t);
  }
  Tensor& y = ctx.output(0, first.dtype(), out);
  size_t es = dtype_size(first.dtype());
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; ++k) outer *= out[size_t(k)];
  for (int k = axis + 1; k < r; ++k) inner *= out[size_t(k)];
  size_t out_row = size_t(out[size_t(axis)] * inner) * es;
  uint8_t* dst = y.raw();
  if (out_row == 0) return;
  // Each input's row bytes, worked out once: with rows of a few bytes (a
  // detector's box pairs) the per-row bookkeeping is most of the work.
  std::vector<std::pair<const uint8_t*, size_t>> rows;
  for (const Tensor* t : ins) rows.emplace_back(t->raw(), size_t(t->shape()[size_t(axis)] * inner) * es);
  parallel_for(ctx, outer, (int64_t(1) << 16) / int64_t(out_row) + 1, [&](int64_t o) {
    uint8_t* at = dst + size_t(o) * out_row;
    for (const auto& [src, row] : rows) {
      copy_run(at, src + size_t(o) * row, row);
      at += row;
    }
  });
}

void run_split(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int r = x.rank();
  int axis = normalize_axis(ctx, ctx.node.attr_i("axis", 0), r);
  int64_t dim = x.shape()[size_t(axis)];
  std::vector<int64_t> given;
  std::vector<int64_t> sizes =
      split_sizes(ctx, dim, ints_from_input_or_attr(ctx, 1, 13, "split", given) ? std::optional(given) : std::nullopt);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; ++k) outer *= x.shape()[size_t(k)];
  for (int k = axis + 1; k < r; ++k) inner *= x.shape()[size_t(k)];
  size_t es = dtype_size(x.dtype());
  int64_t start = 0;
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    Shape out = x.shape();
    out[size_t(axis)] = sizes[size_t(i)];
    Tensor& y = ctx.output(i, x.dtype(), out);
    strided_copy(ctx, x.dtype(), x.raw() + size_t(start * inner) * es, y.raw(), {outer, sizes[size_t(i)] * inner},
                 {dim * inner, 1});
    start += sizes[size_t(i)];
  }
}

}  // namespace

KESTREL_OP(Concat, {.run = run_concat, .half_native = true});
KESTREL_OP(Split, {.run = run_split, .half_native = true});

}  // namespace kestrel::ops

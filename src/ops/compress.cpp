// Compress (select slices along an axis where a bool condition holds) and
// ReverseSequence (reverse the first seq_len steps of each batch entry).
// Both only move elements, so they work on every dtype by element size.
#include <cstring>

#include "ops/movement.h"

namespace kestrel::ops {
namespace {

void run_compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  if (cond.rank() != 1) ctx.fail("condition must be 1-D, got ", shape_str(cond.shape()));
  std::vector<int64_t> keep = cond.to_i64();
  // Without an axis the input is flattened first.
  Shape shape = x.shape();
  int axis = 0;
  if (ctx.node.has("axis"))
    axis = normalize_axis(ctx, ctx.node.attr_i("axis", 0), x.rank());
  else
    shape = {x.numel()};
  if (x.rank() == 0 && ctx.node.has("axis")) ctx.fail("a scalar input has no axis to compress");
  const int64_t dim = shape[size_t(axis)];
  if (int64_t(keep.size()) > dim)
    ctx.fail("condition has ", keep.size(), " entries but axis ", axis, " of ", shape_str(shape), " has only ", dim);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  std::vector<int64_t> picked;
  for (size_t i = 0; i < keep.size(); ++i)
    if (keep[i]) picked.push_back(int64_t(i));
  Shape out = shape;
  out[size_t(axis)] = int64_t(picked.size());
  Tensor& y = ctx.output(0, x.dtype(), out);
  const size_t es = dtype_size(x.dtype()), row = size_t(inner) * es;
  uint8_t* dst = y.raw();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p : picked) {
      if (row) std::memcpy(dst, x.raw() + (size_t(o * dim + p)) * row, row);
      dst += row;
    }
}

void run_reverse_sequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> lens = input_ints(ctx, 1, "sequence_lens");
  int64_t batch_axis = ctx.node.attr_i("batch_axis", 1), time_axis = ctx.node.attr_i("time_axis", 0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, got ", shape_str(x.shape()));
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    ctx.fail("batch_axis ", batch_axis, " and time_axis ", time_axis, " must be 0 and 1 in some order");
  const int64_t B = x.dim(int(batch_axis)), T = x.dim(int(time_axis));
  if (int64_t(lens.size()) != B) ctx.fail("sequence_lens holds ", lens.size(), " values for batch size ", B);
  for (int64_t l : lens)
    if (l < 0 || l > T) ctx.fail("sequence length ", l, " is outside [0, ", T, "]");
  int64_t inner = 1;
  for (int i = 2; i < x.rank(); ++i) inner *= x.dim(i);
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  const size_t row = size_t(inner) * dtype_size(x.dtype());
  // Offset in rows of (batch b, time t).
  auto at = [&](int64_t b, int64_t t) { return size_t(batch_axis == 0 ? b * T + t : t * B + b); };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      int64_t src = t < lens[size_t(b)] ? lens[size_t(b)] - 1 - t : t;
      if (row) std::memcpy(y.raw() + at(b, t) * row, x.raw() + at(b, src) * row, row);
    }
}

}  // namespace

KESTREL_OP(Compress, {.min_opset = 9, .run = run_compress, .half_native = true});
KESTREL_OP(ReverseSequence, {.min_opset = 10, .run = run_reverse_sequence, .half_native = true});

}  // namespace kestrel::ops

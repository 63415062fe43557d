// Gather, GatherElements and GatherND. Every index is checked against its
// axis before any copying so a bad index is an Error, never a wild read.
#include <cstring>

#include "ops/movement.h"

namespace kestrel::ops {
namespace {

// Reads the indices input, failing when it is not an integer tensor.
std::vector<int64_t> read_indices(const KernelContext& ctx, int i) { return input_ints(ctx, i, "indices"); }

void run_gather(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& it = ctx.input(1);
  int r = x.rank();
  if (r == 0) ctx.fail("data must have rank >= 1, got a scalar");
  int axis = normalize_axis(ctx, ctx.node.attr_i("axis", 0), r);
  std::vector<int64_t> idx = read_indices(ctx, 1);
  int64_t n = x.shape()[size_t(axis)];
  for (int64_t& v : idx) v = checked_index(ctx, v, n, "Gather");
  Shape out(x.shape().begin(), x.shape().begin() + axis);
  out.insert(out.end(), it.shape().begin(), it.shape().end());
  out.insert(out.end(), x.shape().begin() + axis + 1, x.shape().end());
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; ++k) outer *= x.shape()[size_t(k)];
  for (int k = axis + 1; k < r; ++k) inner *= x.shape()[size_t(k)];
  Tensor& y = ctx.output(0, x.dtype(), out);
  int64_t m = int64_t(idx.size());
  dispatch_bytes(ctx, x.dtype(), [&](auto* tag) {
    using E = std::remove_pointer_t<decltype(tag)>;
    const E* src = x.data<E>();
    E* dst = y.data<E>();
    parallel_for(ctx, outer * m, 4096 / (inner + 1) + 1, [&](int64_t t) {
      int64_t o = t / m, j = t % m;
      std::copy_n(src + (o * n + idx[size_t(j)]) * inner, inner, dst + t * inner);
    });
  });
}

void run_gather_elements(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& it = ctx.input(1);
  int r = x.rank();
  if (r == 0) ctx.fail("data must have rank >= 1, got a scalar");
  int axis = normalize_axis(ctx, ctx.node.attr_i("axis", 0), r);
  if (it.rank() != r) ctx.fail("indices ", shape_str(it.shape()), " must have the rank of data ", shape_str(x.shape()));
  for (int k = 0; k < r; ++k)
    if (k != axis && it.shape()[size_t(k)] > x.shape()[size_t(k)])
      ctx.fail("indices ", shape_str(it.shape()), " exceed data ", shape_str(x.shape()), " on axis ", k);
  std::vector<int64_t> idx = read_indices(ctx, 1);
  int64_t n = x.shape()[size_t(axis)];
  for (int64_t& v : idx) v = checked_index(ctx, v, n, "GatherElements");
  std::vector<int64_t> xs = row_strides(x.shape());
  Tensor& y = ctx.output(0, x.dtype(), it.shape());
  int64_t total = y.numel(), inner = r ? it.shape()[size_t(r - 1)] : 1;
  if (total == 0) return;
  dispatch_bytes(ctx, x.dtype(), [&](auto* tag) {
    using E = std::remove_pointer_t<decltype(tag)>;
    const E* src = x.data<E>();
    E* dst = y.data<E>();
    parallel_for(ctx, total / inner, 4096 / inner + 1, [&](int64_t row) {
      // Offset of the row in data, with the gathered axis left at 0.
      int64_t off = 0, rem = row;
      for (int k = r - 2; k >= 0; --k) {
        int64_t i = rem % it.shape()[size_t(k)];
        rem /= it.shape()[size_t(k)];
        if (k != axis) off += i * xs[size_t(k)];
      }
      int64_t sa = xs[size_t(axis)], sl = xs[size_t(r - 1)];
      for (int64_t c = 0; c < inner; ++c) {
        int64_t e = row * inner + c;
        dst[e] = src[off + idx[size_t(e)] * sa + (axis == r - 1 ? 0 : c * sl)];
      }
    });
  });
}

void run_gather_nd(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& it = ctx.input(1);
  int r = x.rank(), q = it.rank();
  int64_t b = ctx.node.opset >= 12 ? ctx.node.attr_i("batch_dims", 0) : 0;
  if (q < 1) ctx.fail("indices must have rank >= 1, got a scalar");
  int64_t m = it.shape()[size_t(q - 1)];
  if (b < 0 || b >= std::min(q, r)) ctx.fail("batch_dims ", b, " must be in [0, min(rank(data), rank(indices)))");
  if (b + m > r) ctx.fail("index tuples of length ", m, " with batch_dims ", b, " exceed data rank ", r);
  for (int k = 0; k < b; ++k)
    if (x.shape()[size_t(k)] != it.shape()[size_t(k)])
      ctx.fail("batch dim ", k, " differs: data ", shape_str(x.shape()), ", indices ", shape_str(it.shape()));
  std::vector<int64_t> idx = read_indices(ctx, 1);
  Shape out(it.shape().begin(), it.shape().end() - 1);
  out.insert(out.end(), x.shape().begin() + b + m, x.shape().end());
  std::vector<int64_t> xs = row_strides(x.shape());
  int64_t batches = 1, slice = 1;
  for (int k = 0; k < b; ++k) batches *= x.shape()[size_t(k)];
  for (int64_t k = b + m; k < r; ++k) slice *= x.shape()[size_t(k)];
  int64_t tuples = 1;
  for (int k = 0; k + 1 < q; ++k) tuples *= it.shape()[size_t(k)];
  int64_t per_batch = batches ? tuples / batches : 0;
  int64_t batch_stride = b ? xs[size_t(b - 1)] : 0;
  // Element offset of each tuple's slice in data, checked up front.
  std::vector<int64_t> offs(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (per_batch ? t / per_batch : 0) * batch_stride;
    for (int64_t k = 0; k < m; ++k) {
      int64_t d = x.shape()[size_t(b + k)];
      off += checked_index(ctx, idx[size_t(t * m + k)], d, "GatherND") * xs[size_t(b + k)];
    }
    offs[size_t(t)] = off;
  }
  Tensor& y = ctx.output(0, x.dtype(), out);
  dispatch_bytes(ctx, x.dtype(), [&](auto* tag) {
    using E = std::remove_pointer_t<decltype(tag)>;
    const E* src = x.data<E>();
    E* dst = y.data<E>();
    parallel_for(ctx, tuples, 4096 / (slice + 1) + 1,
                 [&](int64_t t) { std::copy_n(src + offs[size_t(t)], slice, dst + t * slice); });
  });
}

}  // namespace

KESTREL_OP(Gather, {.run = run_gather, .half_native = true});
KESTREL_OP(GatherElements, {.min_opset = 11, .run = run_gather_elements, .half_native = true});
KESTREL_OP(GatherND, {.min_opset = 11, .run = run_gather_nd, .half_native = true});

}  // namespace kestrel::ops

// Trilu: keeps the upper or lower triangle (offset by k) of the last two
// axes and zeroes the rest. Kept runs of each row are copied as bytes.
#include <cstring>

#include "ops/movement.h"

namespace kestrel::ops {
namespace {

void run_trilu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, got ", shape_str(x.shape()));
  int64_t k = 0;
  if (ctx.has_input(1)) {
    std::vector<int64_t> kv = input_ints(ctx, 1, "k");
    if (kv.size() != 1) ctx.fail("k must hold one value, got ", kv.size());
    k = kv[0];
  }
  bool upper = ctx.node.attr_i("upper", 1) != 0;
  int64_t rows = x.dim(-2), cols = x.dim(-1);
  Tensor y(x.dtype(), x.shape());  // zero-filled: only the kept triangle is copied
  size_t es = dtype_size(x.dtype());
  int64_t total_rows = rows ? x.numel() / cols : 0;
  ctx.set_output(0, y);  // storage is shared: the copies below land in the output
  if (cols == 0) return;
  parallel_for(ctx, total_rows, 8192 / (cols * int64_t(es)) + 1, [&](int64_t t) {
    int64_t i = t % rows;
    // Upper keeps columns j >= i + k; lower keeps j <= i + k.
    int64_t j0 = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
    int64_t j1 = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
    if (j1 > j0) std::memcpy(y.raw() + size_t(t * cols + j0) * es, x.raw() + size_t(t * cols + j0) * es, size_t(j1 - j0) * es);
  });
}

}  // namespace

KESTREL_OP(Trilu, {.min_opset = 14, .run = run_trilu, .half_native = true});

}  // namespace kestrel::ops

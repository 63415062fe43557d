// Transpose: a strided view copy; strided_copy merges contiguous dims and
// runs a cache-blocked tile loop for layouts such as NCHW <-> NHWC.
#include "ops/movement.h"

namespace kestrel::ops {
namespace {

void run_transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int r = x.rank();
  std::vector<int64_t> perm = ctx.node.attr_ints("perm");
  if (perm.empty())
    for (int k = r - 1; k >= 0; --k) perm.push_back(k);
  if (int(perm.size()) != r) ctx.fail("perm ", shape_str(perm), " does not match input rank ", r, " ", shape_str(x.shape()));
  std::vector<bool> seen(size_t(r), false);
  std::vector<int64_t> in_st = row_strides(x.shape()), st(static_cast<size_t>(r));
  Shape out(static_cast<size_t>(r));
  for (int k = 0; k < r; ++k) {
    int64_t p = perm[size_t(k)];
    if (p < 0 || p >= r || seen[size_t(p)]) ctx.fail("perm ", shape_str(perm), " is not a permutation of 0..", r - 1);
    seen[size_t(p)] = true;
    out[size_t(k)] = x.shape()[size_t(p)];
    st[size_t(k)] = in_st[size_t(p)];
  }
  Tensor& y = ctx.output(0, x.dtype(), out);
  strided_copy(ctx, x.dtype(), x.raw(), y.raw(), out, st);
}

}  // namespace

KESTREL_OP(Transpose, {.run = run_transpose, .half_native = true});

}  // namespace kestrel::ops

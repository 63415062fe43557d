// OneHot: a new axis of size depth holding on_value at each index and
// off_value elsewhere. Indices outside [-depth, depth) give an all-off row,
// as the ONNX spec says.
#include <cstring>

#include "ops/movement.h"

namespace kestrel::ops {
namespace {

void run_onehot(KernelContext& ctx) {
  const Tensor& it = ctx.input(0);
  const Tensor& dt = ctx.input(1);
  const Tensor& values = ctx.input(2);
  if (dt.numel() != 1) ctx.fail("depth must hold one value, got ", shape_str(dt.shape()));
  if (values.numel() != 2) ctx.fail("values must hold [off_value, on_value], got ", shape_str(values.shape()));
  int64_t depth = dt.cast(DType::Int64).to_i64()[0];
  if (depth <= 0) ctx.fail("depth must be positive, got ", depth);
  int r = it.rank() + 1;
  int64_t axis = ctx.node.attr_i("axis", -1);
  if (axis < -r || axis >= r) ctx.fail("axis ", axis, " is out of range for output rank ", r);
  if (axis < 0) axis += r;
  std::vector<int64_t> idx = it.cast(DType::Int64).to_i64();
  Shape out = it.shape();
  out.insert(out.begin() + axis, depth);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= it.shape()[size_t(d)];
  for (int64_t d = axis; d < it.rank(); ++d) inner *= it.shape()[size_t(d)];
  Tensor& y = ctx.output(0, values.dtype(), out);
  size_t es = dtype_size(values.dtype());
  const uint8_t* off = values.raw();
  const uint8_t* on = values.raw() + es;
  uint8_t* dst = y.raw();
  for (int64_t e = 0; e < y.numel(); ++e) std::memcpy(dst + size_t(e) * es, off, es);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < inner; ++c) {
      int64_t v = idx[size_t(o * inner + c)];
      if (v < -depth || v >= depth) continue;
      if (v < 0) v += depth;
      std::memcpy(dst + size_t((o * depth + v) * inner + c) * es, on, es);
    }
}

}  // namespace

KESTREL_OP(OneHot, {.min_opset = 9, .run = run_onehot, .half_native = true});

}  // namespace kestrel::ops

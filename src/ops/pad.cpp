// Pad with modes constant, reflect, edge and wrap. Each output row maps to
// one source row (or to the constant); the inner axis copies its middle part
// with memcpy and maps only the padded ends element by element.
#include <cstring>
#include <string>

#include "ops/movement.h"

namespace kestrel::ops {
namespace {

enum class Mode { Constant, Reflect, Edge, Wrap };

// Source index for output index o on an axis of size d padded by `before`;
// -1 means "the constant".
int64_t source_index(int64_t o, int64_t d, int64_t before, Mode mode) {
  int64_t i = o - before;
  if (i >= 0 && i < d) return i;
  switch (mode) {
    case Mode::Constant: return -1;
    case Mode::Edge: return i < 0 ? 0 : d - 1;
    case Mode::Wrap: return ((i % d) + d) % d;
    case Mode::Reflect: {
      if (d == 1) return 0;
      int64_t p = 2 * (d - 1);
      i = ((i % p) + p) % p;
      return i < d ? i : p - i;
    }
  }
  return -1;
}

Mode parse_mode(const KernelContext& ctx, const std::string& ms) {
  if (ms == "constant") return Mode::Constant;
  if (ms == "reflect") return Mode::Reflect;
  if (ms == "edge") return Mode::Edge;
  if (ms == "wrap" && ctx.node.opset >= 19) return Mode::Wrap;
  ctx.fail("mode '", ms, "' is not supported at opset ", ctx.node.opset);
}

void run_pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int r = x.rank();
  const ir::Node& n = ctx.node;
  std::string ms = n.attr_s("mode", "constant");
  Mode mode = parse_mode(ctx, ms);
  std::vector<int64_t> pads, axes;
  Tensor value = Tensor(x.dtype(), {});  // zero of the data type
  if (n.opset < 11) {
    pads = n.attr_ints("pads");
    value = Tensor::scalar_f32(n.attr_f("value", 0)).cast(x.dtype());
  } else {
    pads = input_ints(ctx, 1, "pads");
    if (ctx.has_input(2)) {
      const Tensor& v = ctx.input(2);
      if (v.numel() != 1) ctx.fail("constant_value must hold one element, got ", shape_str(v.shape()));
      value = v.dtype() == x.dtype() ? v : v.cast(x.dtype());
    }
    if (n.opset >= 18 && ctx.has_input(3)) axes = input_ints(ctx, 3, "axes");
  }
  if (axes.empty())
    for (int k = 0; k < r; ++k) axes.push_back(k);
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads ", shape_str(pads), " must have 2 x ", axes.size(), " entries for input ", shape_str(x.shape()));
  std::vector<int64_t> before(size_t(r), 0), after(size_t(r), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int a = normalize_axis(ctx, axes[i], r);
    before[size_t(a)] = pads[i];
    after[size_t(a)] = pads[i + axes.size()];
  }
  Shape out(x.shape());
  for (int k = 0; k < r; ++k) {
    int64_t d = x.shape()[size_t(k)];
    if (!add_fits(d, before[size_t(k)], out[size_t(k)]) || !add_fits(out[size_t(k)], after[size_t(k)], out[size_t(k)]))
      ctx.fail("pads ", shape_str(pads), " on axis ", k, " of ", shape_str(x.shape()), ": the padded size overflows int64");
    if (out[size_t(k)] < 0) ctx.fail("pads ", shape_str(pads), " remove more than axis ", k, " of ", shape_str(x.shape()), " holds");
    if (mode != Mode::Constant && d == 0 && out[size_t(k)] > 0)
      ctx.fail("cannot pad the empty axis ", k, " of ", shape_str(x.shape()), " in mode ", ms);
    if (mode != Mode::Constant && (before[size_t(k)] < 0 || after[size_t(k)] < 0))
      ctx.fail("negative pads ", shape_str(pads), " are only supported in constant mode");
  }
  if (r == 0) return ctx.set_output(0, x);
  Tensor& y = ctx.output(0, x.dtype(), out);
  if (y.numel() == 0) return;
  size_t es = dtype_size(x.dtype());
  int64_t in_inner = x.shape()[size_t(r - 1)], out_inner = out[size_t(r - 1)], b = before[size_t(r - 1)];
  int64_t rows = y.numel() / out_inner;
  std::vector<int64_t> xs = row_strides(x.shape());
  // Inner indices that come straight from the source row.
  int64_t mid0 = std::clamp<int64_t>(b, 0, out_inner), mid1 = std::clamp<int64_t>(b + in_inner, 0, out_inner);
  const uint8_t* src = x.raw();
  const uint8_t* val = value.raw();
  uint8_t* dst = y.raw();
  parallel_for(ctx, rows, 8192 / (out_inner * int64_t(es)) + 1, [&](int64_t row) {
    uint8_t* drow = dst + size_t(row * out_inner) * es;
    int64_t off = 0, rem = row;
    bool constant = false;
    for (int k = r - 2; k >= 0 && !constant; --k) {
      int64_t o = rem % out[size_t(k)];
      rem /= out[size_t(k)];
      int64_t i = source_index(o, x.shape()[size_t(k)], before[size_t(k)], mode);
      if (i < 0) constant = true;
      off += i * xs[size_t(k)];
    }
    if (constant) {
      for (int64_t c = 0; c < out_inner; ++c) std::memcpy(drow + size_t(c) * es, val, es);
      return;
    }
    const uint8_t* srow = src + size_t(off) * es;
    if (mid1 > mid0) std::memcpy(drow + size_t(mid0) * es, srow + size_t(mid0 - b) * es, size_t(mid1 - mid0) * es);
    for (int64_t c = 0; c < out_inner; ++c) {
      if (c == mid0 && mid1 > mid0) c = mid1;
      if (c >= out_inner) break;
      int64_t i = source_index(c, in_inner, b, mode);
      std::memcpy(drow + size_t(c) * es, i < 0 ? val : srow + size_t(i) * es, es);
    }
  });
}

}  // namespace

KESTREL_OP(Pad, {.min_opset = 2, .run = run_pad, .half_native = true});

}  // namespace kestrel::ops

// MaxUnpool: scatters each input value to the flat position its index names
// (the indices MaxPool returns) in a tensor of the inferred unpooled shape;
// every other element is zero. A larger output_shape pads that tensor with
// zeros at the end of each dim, as ONNX's reference does.
#include "ops/common.h"

namespace kestrel::ops {
namespace {

void run_max_unpool(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& I = ctx.input(1);
  const ir::Node& n = ctx.node;
  if (X.rank() < 3) ctx.fail("input must be N x C x spatial..., got ", shape_str(X.shape()));
  if (I.shape() != X.shape())
    ctx.fail("indices ", shape_str(I.shape()), " must have the input's shape ", shape_str(X.shape()));
  const size_t nd = size_t(X.rank() - 2);
  std::vector<int64_t> kernel = n.attr_ints("kernel_shape");
  if (kernel.size() != nd) ctx.fail("kernel_shape has ", kernel.size(), " dims but the input has ", nd, " spatial dims");
  std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (strides.size() != nd || pads.size() != 2 * nd)
    ctx.fail("strides/pads have ", strides.size(), "/", pads.size(), " values, expected ", nd, "/", 2 * nd);
  Shape out{X.dim(0), X.dim(1)};
  for (size_t d = 0; d < nd; ++d)
    out.push_back((X.dim(int(d) + 2) - 1) * strides[d] + kernel[d] - pads[d] - pads[d + nd]);
  for (int64_t d : out)
    if (d < 0) ctx.fail("inferred output shape ", shape_str(out), " has a negative dim");
  Shape given = out;
  if (ctx.has_input(2)) {
    given = ctx.input(2).to_i64();
    bool fits = given.size() == out.size();
    for (size_t d = 0; fits && d < out.size(); ++d) fits = given[d] >= out[d];
    if (!fits) ctx.fail("output_shape ", shape_str(given), " is smaller than the unpooled shape ", shape_str(out));
  }
  std::vector<int64_t> idx = I.to_i64();
  const int64_t total = shape_numel(out);
  for (int64_t i : idx)
    if (i < 0 || i >= total) ctx.fail("index ", i, " is out of range for unpooled shape ", shape_str(out));
  Tensor Y(X.dtype(), given);  // zero-filled: only pooled positions are written
  ctx.set_output(0, Y);         // shares storage with Y
  // Element k of the unpooled tensor lands at the same multi-index in Y.
  std::vector<int64_t> place(static_cast<size_t>(total));
  for (int64_t k = 0; k < total; ++k) {
    int64_t q = k, off = 0, stride = 1;
    for (size_t d = out.size(); d-- > 0;) {
      off += (q % out[d]) * stride;
      q /= out[d];
      stride *= given[d];
    }
    place[size_t(k)] = off;
  }
  dispatch_numeric(X.dtype(), n.where().c_str(), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    for (size_t i = 0; i < idx.size(); ++i) y[place[size_t(idx[i])]] = x[i];
  });
}

}  // namespace

KESTREL_OP(MaxUnpool, {.min_opset = 9, .run = run_max_unpool});

}  // namespace kestrel::ops

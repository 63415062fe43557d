// Ops that produce shapes or simple generated tensors: Shape, Size,
// ConstantOfShape, Range, NonZero and EyeLike.
#include <cmath>
#include <cstring>

#include "ops/movement.h"

namespace kestrel::ops {
namespace {

void run_shape(KernelContext& ctx) {
  const Shape& s = ctx.input(0).shape();
  int64_t r = int64_t(s.size()), start = 0, end = r;
  if (ctx.node.opset >= 15) {
    // Out-of-range start/end are clamped, as the spec says.
    start = ctx.node.attr_i("start", 0);
    end = ctx.node.attr_i("end", r);
    start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
    end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  }
  std::vector<int64_t> dims;
  for (int64_t k = start; k < end; ++k) dims.push_back(s[size_t(k)]);
  ctx.set_output(0, Tensor::from_i64(dims));
}

void run_size(KernelContext& ctx) { ctx.set_output(0, Tensor::scalar_i64(ctx.input(0).numel())); }

void run_constant_of_shape(KernelContext& ctx) {
  std::vector<int64_t> shape = input_ints(ctx, 0, "shape");
  for (int64_t d : shape)
    if (d < 0) ctx.fail("shape ", shape_str(shape), " has a negative dimension");
  const ir::Attribute* a = ctx.node.attr("value");
  if (!a) {
    Tensor& y = ctx.output(0, DType::Float32, shape);
    if (y.nbytes()) std::memset(y.raw(), 0, y.nbytes());
    return;
  }
  const Tensor& v = a->t;
  if (v.numel() != 1) ctx.fail("value must hold exactly one element, got ", shape_str(v.shape()));
  Tensor& y = ctx.output(0, v.dtype(), shape);
  size_t es = dtype_size(v.dtype());
  uint8_t* dst = y.raw();
  for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(dst + size_t(i) * es, v.raw(), es);
}

void run_range(KernelContext& ctx) {
  const Tensor& t0 = ctx.input(0);
  for (int i = 0; i < 3; ++i) {
    const Tensor& t = ctx.input(i);
    if (t.numel() != 1) ctx.fail("input ", i, " must be a scalar, got ", shape_str(t.shape()));
    if (t.dtype() != t0.dtype()) ctx.fail("inputs must share one type, got ", dtype_name(t0.dtype()), " and ", dtype_name(t.dtype()));
  }
  dispatch_numeric(t0.dtype(), "Range", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if constexpr (std::is_same_v<T, bool>) {
      ctx.fail("bool inputs are not supported");
    } else {
      T start = *ctx.input(0).data<T>(), limit = *ctx.input(1).data<T>(), delta = *ctx.input(2).data<T>();
      if (delta == T(0)) ctx.fail("delta must not be 0");
      double n = std::ceil((double(limit) - double(start)) / double(delta));
      if (!(n < 1e12)) ctx.fail("would produce ", n, " elements (start ", double(start), ", limit ", double(limit), ")");
      int64_t count = n > 0 ? int64_t(n) : 0;  // (converting -1e300 to int64 is undefined)
      Tensor& y = ctx.output(0, t0.dtype(), {count});
      T* d = y.data<T>();
      for (int64_t i = 0; i < count; ++i) d[i] = T(start + T(i) * delta);
    }
  });
}

void run_nonzero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int r = x.rank();
  std::vector<int64_t> flat;
  dispatch_numeric(x.dtype(), "NonZero", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* d = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i)
      if (d[i] != T(0)) flat.push_back(i);
  });
  // A scalar is treated as a 1-element vector, as NumPy and ONNX Runtime do.
  int rows = std::max(r, 1);
  int64_t n = int64_t(flat.size());
  Tensor& y = ctx.output(0, DType::Int64, {rows, n});
  int64_t* out = y.data<int64_t>();
  for (int64_t j = 0; j < n; ++j) {
    int64_t rem = flat[size_t(j)];
    for (int k = r - 1; k >= 0; --k) {
      out[k * n + j] = rem % x.shape()[size_t(k)];
      rem /= x.shape()[size_t(k)];
    }
  }
}

void run_eye_like(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.fail("input must be 2-D, got ", shape_str(x.shape()));
  DType dt = ctx.node.has("dtype") ? DType(ctx.node.attr_i("dtype", 1)) : x.dtype();
  if (!dtype_supported(dt)) ctx.fail("dtype ", int(dt), " is not supported");
  int64_t k = ctx.node.attr_i("k", 0), rows = x.dim(0), cols = x.dim(1);
  Tensor y(dt, x.shape());  // zero-filled; the diagonal is set below
  Tensor one = Tensor::scalar_f32(1).cast(dt);
  size_t es = dtype_size(dt);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t j = i + k;
    if (j >= 0 && j < cols) std::memcpy(y.raw() + size_t(i * cols + j) * es, one.raw(), es);
  }
  ctx.set_output(0, y);
}

}  // namespace

KESTREL_OP(Shape, {.run = run_shape, .half_native = true, .shape_only = true});
KESTREL_OP(Size, {.run = run_size, .half_native = true, .shape_only = true});
KESTREL_OP(ConstantOfShape, {.min_opset = 9, .run = run_constant_of_shape, .half_native = true});
KESTREL_OP(Range, {.min_opset = 11, .run = run_range});
KESTREL_OP(NonZero, {.min_opset = 9, .run = run_nonzero});
KESTREL_OP(EyeLike, {.min_opset = 9, .run = run_eye_like, .half_native = true});

}  // namespace kestrel::ops

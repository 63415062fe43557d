// Scan (opset 9+): runs its body once per step of the scan inputs, threading
// state variables through and stacking each step's scan outputs. Inputs are
// sliced (and outputs stacked) along per-tensor axes, in either direction.
// Values pass through untouched, so Scan is half_native.
#include <cstring>

#include "ops/common.h"

namespace kestrel::ops {
namespace {

// A tensor seen as [outer, len, inner] around one axis, inner in bytes.
struct AxisView {
  int64_t outer = 1, len = 1;
  size_t inner = 1;
};

AxisView view_around(const Shape& s, int axis, DType t) {
  AxisView v;
  for (int i = 0; i < axis; ++i) v.outer *= s[size_t(i)];
  v.len = s[size_t(axis)];
  v.inner = dtype_size(t);
  for (size_t i = size_t(axis) + 1; i < s.size(); ++i) v.inner *= size_t(s[i]);
  return v;
}

// Slice `at` of x along `axis`, with that axis removed.
Tensor slice_at(const Tensor& x, int axis, int64_t at) {
  Shape s = x.shape();
  AxisView v = view_around(s, axis, x.dtype());
  s.erase(s.begin() + axis);
  Tensor out(x.dtype(), s);
  for (int64_t o = 0; o < v.outer; ++o)
    if (v.inner) std::memcpy(out.raw() + size_t(o) * v.inner, x.raw() + size_t(o * v.len + at) * v.inner, v.inner);
  return out;
}

// Copies `part` into slice `at` along `axis` of dst.
void place_at(Tensor& dst, int axis, int64_t at, const Tensor& part) {
  AxisView v = view_around(dst.shape(), axis, dst.dtype());
  for (int64_t o = 0; o < v.outer; ++o)
    if (v.inner) std::memcpy(dst.raw() + size_t(o * v.len + at) * v.inner, part.raw() + size_t(o) * v.inner, v.inner);
}

std::vector<int64_t> per_tensor_attr(const KernelContext& ctx, const char* name, int64_t count) {
  std::vector<int64_t> v = ctx.node.attr_ints(name, std::vector<int64_t>(size_t(count), 0));
  if (int64_t(v.size()) != count) ctx.fail(name, " has ", v.size(), " values but there are ", count, " tensors");
  return v;
}

void run_scan(KernelContext& ctx) {
  const ir::Attribute* ba = ctx.node.attr("body");
  if (!ba || !ba->g) ctx.fail("the body subgraph attribute is missing");
  const ir::Graph& body = *ba->g;
  const int64_t M = ctx.node.attr_i("num_scan_inputs", -1);
  const int64_t N = ctx.num_inputs() - M;
  if (M < 1 || N < 0) ctx.fail("num_scan_inputs ", M, " must be in [1, ", ctx.num_inputs(), "] (the input count)");
  const int64_t K = ctx.num_outputs() - N;
  if (K < 0 || int64_t(body.inputs.size()) != N + M || int64_t(body.outputs.size()) != N + K)
    ctx.fail("body takes ", body.inputs.size(), " inputs and gives ", body.outputs.size(), " outputs, which does not fit ",
             N, " state variables, ", M, " scan inputs and ", ctx.num_outputs(), " node outputs");
  std::vector<int64_t> in_axes = per_tensor_attr(ctx, "scan_input_axes", M);
  std::vector<int64_t> in_dirs = per_tensor_attr(ctx, "scan_input_directions", M);
  std::vector<int64_t> out_axes = per_tensor_attr(ctx, "scan_output_axes", K);
  std::vector<int64_t> out_dirs = per_tensor_attr(ctx, "scan_output_directions", K);

  int64_t T = -1;
  std::vector<int> axis_of(static_cast<size_t>(M));
  for (int64_t i = 0; i < M; ++i) {
    const Tensor& x = ctx.input(int(N + i));
    if (x.rank() < 1) ctx.fail("scan input ", i, " is a scalar; it needs an axis to scan along");
    axis_of[size_t(i)] = normalize_axis(ctx, in_axes[size_t(i)], x.rank());
    int64_t len = x.dim(axis_of[size_t(i)]);
    if (T >= 0 && len != T) ctx.fail("scan input ", i, " has ", len, " steps but scan input 0 has ", T);
    T = len;
  }

  std::vector<Tensor> state;
  for (int64_t i = 0; i < N; ++i) state.push_back(ctx.input(int(i)));
  std::vector<Tensor> outs(static_cast<size_t>(K));
  std::vector<int> out_axis(static_cast<size_t>(K));
  for (int64_t t = 0; t < T; ++t) {
    std::vector<Tensor> in(state);
    for (int64_t i = 0; i < M; ++i)
      in.push_back(slice_at(ctx.input(int(N + i)), axis_of[size_t(i)], in_dirs[size_t(i)] ? T - 1 - t : t));
    std::vector<Tensor> res = ctx.run_subgraph(body, in);
    for (int64_t i = 0; i < N; ++i) state[size_t(i)] = std::move(res[size_t(i)]);
    for (int64_t k = 0; k < K; ++k) {
      const Tensor& part = res[size_t(N + k)];
      Tensor& dst = outs[size_t(k)];
      if (t == 0) {  // the first step fixes each scan output's shape
        out_axis[size_t(k)] = normalize_axis(ctx, out_axes[size_t(k)], part.rank() + 1);
        Shape s = part.shape();
        s.insert(s.begin() + out_axis[size_t(k)], T);
        dst = Tensor(part.dtype(), s);
      }
      Shape want = dst.shape();
      want.erase(want.begin() + out_axis[size_t(k)]);
      if (part.shape() != want || part.dtype() != dst.dtype())
        ctx.fail("scan output ", k, " changes from ", dtype_name(dst.dtype()), " ", shape_str(want), " to ",
                 dtype_name(part.dtype()), " ", shape_str(part.shape()), " at step ", t);
      place_at(dst, out_axis[size_t(k)], out_dirs[size_t(k)] ? T - 1 - t : t, part);
    }
  }
  for (int64_t i = 0; i < N; ++i) ctx.set_output(int(i), state[size_t(i)]);
  for (int64_t k = 0; k < K; ++k) {
    if (T > 0) {
      ctx.set_output(int(N + k), outs[size_t(k)]);
      continue;
    }
    // No steps: an empty tensor with the type and shape the body declares.
    const ir::Value& v = body.values[size_t(body.outputs[size_t(N + k)])];
    if (!dtype_supported(v.dtype)) ctx.fail("scan output ", k, " has no declared type for a scan of 0 steps");
    Shape s;
    if (v.shape)
      for (const ir::Dim& d : *v.shape) s.push_back(d.known() ? d.value : 0);
    int axis = normalize_axis(ctx, out_axes[size_t(k)], int(s.size()) + 1);
    s.insert(s.begin() + axis, 0);
    ctx.output(int(N + k), v.dtype, s);
  }
}

}  // namespace

KESTREL_OP(Scan, {.min_opset = 9, .run = run_scan, .half_native = true});

}  // namespace kestrel::ops

// Scan: runs its body once per step of the scan inputs, threading state
// variables through and stacking each step's scan outputs. From opset 9 inputs
// are sliced (and outputs stacked) along per-tensor axes, in either direction;
// opset 8 has a leading batch dim and per-entry sequence lengths instead.
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

const ir::Graph& body_of(const KernelContext& ctx) {
  const ir::Attribute* ba = ctx.node.attr("body");
  if (!ba || !ba->g) ctx.fail("the body subgraph attribute is missing");
  return *ba->g;
}

// Scan-output k of the body as declared, for results of 0 steps: the body's
// type and shape (unknown dims as 0) with `lead` dims inserted at `axis`.
Tensor declared_empty(const KernelContext& ctx, const ir::Graph& body, size_t out_index, int64_t axis, Shape lead) {
  const ir::Value& v = body.values[size_t(body.outputs[out_index])];
  if (!dtype_supported(v.dtype)) ctx.fail("body output ", out_index, " has no declared type for a scan of 0 steps");
  Shape s;
  if (v.shape)
    for (const ir::Dim& d : *v.shape) s.push_back(d.known() ? d.value : 0);
  int a = normalize_axis(ctx, axis, int(s.size()) + 1);
  s.insert(s.begin() + a, lead.begin(), lead.end());
  return Tensor(v.dtype, s);
}

// The step loop shared by both Scan versions: T steps over scan inputs xs
// (sliced along in_axis, reversed where in_dir is set); returns the final
// states followed by the K stacked scan outputs (undefined when T is 0).
// `done` counts this node's steps across calls (opset 8 scans per batch entry).
std::vector<Tensor> scan_steps(KernelContext& ctx, const ir::Graph& body, std::vector<Tensor> state,
                               const std::vector<Tensor>& xs, const std::vector<int>& in_axis,
                               const std::vector<int64_t>& in_dirs, const std::vector<int64_t>& out_axes,
                               const std::vector<int64_t>& out_dirs, int64_t T, int64_t& done) {
  const size_t N = state.size(), K = out_axes.size();
  // The step count is known up front (a scan input [2^40, 0] holds no data
  // but that many steps): refuse it before the outputs are sized by it.
  const int64_t cap = ctx.limits().max_loop_iterations;
  if (cap > 0 && T > cap - done) ctx.check_iteration(cap);
  std::vector<Tensor> outs(K);
  std::vector<int> out_axis(K);
  for (int64_t t = 0; t < T; ++t) {
    ctx.check_iteration(done++);
    std::vector<Tensor> in(state);
    for (size_t i = 0; i < xs.size(); ++i) in.push_back(slice_at(xs[i], in_axis[i], in_dirs[i] ? T - 1 - t : t));
    std::vector<Tensor> res = ctx.run_subgraph(body, in);
    for (size_t i = 0; i < N; ++i) state[i] = std::move(res[i]);
    for (size_t k = 0; k < K; ++k) {
      const Tensor& part = res[N + k];
      Tensor& dst = outs[k];
      if (t == 0) {  // the first step fixes each scan output's shape
        out_axis[k] = normalize_axis(ctx, out_axes[k], part.rank() + 1);
        Shape sh = part.shape();
        sh.insert(sh.begin() + out_axis[k], T);
        dst = Tensor(part.dtype(), sh);
      }
      Shape want = dst.shape();
      want.erase(want.begin() + out_axis[k]);
      if (part.shape() != want || part.dtype() != dst.dtype())
        ctx.fail("scan output ", k, " changes from ", dtype_name(dst.dtype()), " ", shape_str(want), " to ",
                 dtype_name(part.dtype()), " ", shape_str(part.shape()), " at step ", t);
      place_at(dst, out_axis[k], out_dirs[k] ? T - 1 - t : t, part);
    }
  }
  state.insert(state.end(), outs.begin(), outs.end());
  return state;
}

// Opset 9+: inputs are N states then M scan inputs, with per-tensor axes and directions.
void run_scan(KernelContext& ctx) {
  const ir::Graph& body = body_of(ctx);
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
  std::vector<Tensor> xs, state;
  for (int64_t i = 0; i < M; ++i) {
    const Tensor& x = ctx.input(int(N + i));
    if (x.rank() < 1) ctx.fail("scan input ", i, " is a scalar; it needs an axis to scan along");
    axis_of[size_t(i)] = normalize_axis(ctx, in_axes[size_t(i)], x.rank());
    int64_t len = x.dim(axis_of[size_t(i)]);
    if (T >= 0 && len != T) ctx.fail("scan input ", i, " has ", len, " steps but scan input 0 has ", T);
    T = len;
    xs.push_back(x);
  }
  for (int64_t i = 0; i < N; ++i) state.push_back(ctx.input(int(i)));
  int64_t done = 0;
  std::vector<Tensor> res = scan_steps(ctx, body, state, xs, axis_of, in_dirs, out_axes, out_dirs, T, done);
  for (int64_t i = 0; i < N + K; ++i)
    ctx.set_output(int(i), res[size_t(i)].defined() ? res[size_t(i)]
                                                    : declared_empty(ctx, body, size_t(i), out_axes[size_t(i - N)], {0}));
}

// Opset 8: an optional sequence_lens input, then N states [batch, ...] and M
// scan inputs [batch, seq, ...]; each batch entry is scanned on its own over
// its sequence length, and scan outputs [batch, seq, ...] are zero past it.
void run_scan8(KernelContext& ctx) {
  const ir::Graph& body = body_of(ctx);
  const int64_t M = ctx.node.attr_i("num_scan_inputs", -1);
  const int64_t N = ctx.num_inputs() - 1 - M;
  if (M < 1 || N < 0) ctx.fail("num_scan_inputs ", M, " must be in [1, ", ctx.num_inputs() - 1, "]");
  const int64_t K = ctx.num_outputs() - N;
  if (K < 0 || int64_t(body.inputs.size()) != N + M || int64_t(body.outputs.size()) != N + K)
    ctx.fail("body takes ", body.inputs.size(), " inputs and gives ", body.outputs.size(), " outputs, which does not fit ",
             N, " state variables, ", M, " scan inputs and ", ctx.num_outputs(), " node outputs");
  std::vector<int64_t> dirs = per_tensor_attr(ctx, "directions", M);
  const Tensor& x0 = ctx.input(int(1 + N));
  if (x0.rank() < 2) ctx.fail("scan inputs must be [batch, sequence, ...], got ", shape_str(x0.shape()));
  const int64_t B = x0.dim(0), S = x0.dim(1);
  for (int64_t i = 0; i < N + M; ++i) {
    const Tensor& t = ctx.input(int(1 + i));
    if (t.rank() < 1 || t.dim(0) != B || (i >= N && (t.rank() < 2 || t.dim(1) != S)))
      ctx.fail("input ", 1 + i, " ", shape_str(t.shape()), " does not match batch ", B, " and sequence length ", S);
  }
  std::vector<int64_t> lens(static_cast<size_t>(B), S);
  if (ctx.has_input(0)) {
    lens = ctx.input(0).to_i64();
    if (int64_t(lens.size()) != B) ctx.fail("sequence_lens holds ", lens.size(), " values for batch size ", B);
    for (int64_t l : lens)
      if (l < 0 || l > S) ctx.fail("sequence length ", l, " is outside [0, ", S, "]");
  }
  std::vector<Tensor> out(static_cast<size_t>(N + K));
  int64_t done = 0;  // steps over all batch entries, for the iteration cap
  for (int64_t b = 0; b < B; ++b) {
    std::vector<Tensor> state, xs;
    for (int64_t i = 0; i < N; ++i) state.push_back(slice_at(ctx.input(int(1 + i)), 0, b));
    for (int64_t i = 0; i < M; ++i) xs.push_back(slice_at(ctx.input(int(1 + N + i)), 0, b));
    std::vector<Tensor> res = scan_steps(ctx, body, state, xs, std::vector<int>(size_t(M), 0), dirs,
                                         std::vector<int64_t>(size_t(K), 0), std::vector<int64_t>(size_t(K), 0),
                                         lens[size_t(b)], done);
    for (int64_t i = 0; i < N + K; ++i) {
      Tensor& r = res[size_t(i)];
      if (!r.defined()) continue;  // a scan output of 0 steps: its batch row stays zero
      Tensor& dst = out[size_t(i)];
      if (i >= N) {  // pad the steps out to the full sequence length
        Shape full = r.shape();
        full[0] = S;
        Tensor padded(r.dtype(), full);
        if (r.nbytes()) std::memcpy(padded.raw(), r.raw(), r.nbytes());
        r = padded;
      }
      if (!dst.defined()) {
        Shape sh = r.shape();
        sh.insert(sh.begin(), B);
        dst = Tensor(r.dtype(), sh);
      }
      Shape want(dst.shape().begin() + 1, dst.shape().end());
      if (r.shape() != want || r.dtype() != dst.dtype())
        ctx.fail("output ", i, " of batch entry ", b, " is ", shape_str(r.shape()), " but earlier ones are ", shape_str(want));
      place_at(dst, 0, b, r);
    }
  }
  for (int64_t i = 0; i < N + K; ++i)
    ctx.set_output(int(i), out[size_t(i)].defined() ? out[size_t(i)]
                                                    : declared_empty(ctx, body, size_t(i), 0, {B, S}));
}

}  // namespace

KESTREL_OP(Scan, {.min_opset = 8, .max_opset = 8, .run = run_scan8, .half_native = true});
KESTREL_OP(Scan, {.min_opset = 9, .run = run_scan, .half_native = true});

}  // namespace kestrel::ops

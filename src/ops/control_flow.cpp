// If and Loop: run subgraphs through the executor (ctx.run_subgraph), which
// resolves names the bodies read from enclosing scopes. Values pass through
// untouched, so both are half_native.
#include <cstring>
#include <type_traits>

#include "ops/movement.h"

namespace kestrel::ops {
namespace {

const ir::Graph& graph_attr(const KernelContext& ctx, const char* name) {
  const ir::Attribute* a = ctx.node.attr(name);
  if (!a || !a->g) ctx.fail("the ", name, " subgraph attribute is missing");
  return *a->g;
}

bool read_cond(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.numel() != 1) ctx.fail(what, " must hold one value, got ", shape_str(t.shape()));
  bool nonzero = false;  // (read in place: an If runs per inference, often nested)
  dispatch_numeric(t.dtype(), what, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    nonzero = t.data<T>()[0] != T(0);
  });
  return nonzero;
}

void run_if(KernelContext& ctx) {
  bool cond = read_cond(ctx, ctx.input(0), "cond");
  const ir::Graph& branch = graph_attr(ctx, cond ? "then_branch" : "else_branch");
  std::vector<Tensor> outs = ctx.run_subgraph(branch, {});
  if (int(outs.size()) != ctx.num_outputs())
    ctx.fail("the ", cond ? "then" : "else", " branch gives ", outs.size(), " outputs but the node has ",
             ctx.num_outputs());
  for (size_t i = 0; i < outs.size(); ++i) ctx.set_output(int(i), std::move(outs[i]));
}

// Stacks equally shaped tensors along a new axis 0.
Tensor stack(const KernelContext& ctx, const std::vector<Tensor>& parts, size_t which) {
  const Tensor& first = parts[0];
  Shape out = first.shape();
  out.insert(out.begin(), int64_t(parts.size()));
  Tensor t(first.dtype(), out);
  size_t bytes = first.nbytes();
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].shape() != first.shape() || parts[i].dtype() != first.dtype())
      ctx.fail("scan output ", which, " changes from ", dtype_name(first.dtype()), " ", shape_str(first.shape()),
               " to ", dtype_name(parts[i].dtype()), " ", shape_str(parts[i].shape()), " at iteration ", i);
    if (bytes) std::memcpy(t.raw() + i * bytes, parts[i].raw(), bytes);
  }
  return t;
}

void run_loop(KernelContext& ctx) {
  const ir::Graph& body = graph_attr(ctx, "body");
  bool has_m = ctx.has_input(0), has_cond = ctx.has_input(1);
  if (!has_m && !has_cond) ctx.fail("has neither a trip count M nor a condition, so it would never end");
  int64_t max_trips = INT64_MAX;
  if (has_m) {
    std::vector<int64_t> m = input_ints(ctx, 0, "M");
    if (m.size() != 1) ctx.fail("M must hold one value, got ", m.size());
    max_trips = m[0];
  }
  bool cond = has_cond ? read_cond(ctx, ctx.input(1), "cond") : true;
  int n_carried = ctx.num_inputs() - 2;
  if (n_carried < 0) ctx.fail("needs inputs M and cond (possibly empty)");
  int n_scan = int(body.outputs.size()) - 1 - n_carried;
  if (int(body.inputs.size()) != 2 + n_carried || n_scan < 0 || ctx.num_outputs() != n_carried + n_scan)
    ctx.fail("body takes ", body.inputs.size(), " inputs and gives ", body.outputs.size(), " outputs, which does not fit ",
             n_carried, " loop-carried values and ", ctx.num_outputs(), " node outputs");
  std::vector<Tensor> carried;
  for (int i = 0; i < n_carried; ++i) carried.push_back(ctx.input(2 + i));
  std::vector<std::vector<Tensor>> scans(static_cast<size_t>(n_scan));
  for (int64_t it = 0; it < max_trips && cond; ++it) {
    ctx.check_iteration(it);  // M may be 2^62 or cond may never turn false
    std::vector<Tensor> in{Tensor::scalar_i64(it), Tensor(DType::Bool, {})};
    *in[1].data<bool>() = cond;
    in.insert(in.end(), carried.begin(), carried.end());
    std::vector<Tensor> outs = ctx.run_subgraph(body, in);
    cond = read_cond(ctx, outs[0], "the body's cond output");
    for (int i = 0; i < n_carried; ++i) carried[size_t(i)] = std::move(outs[size_t(1 + i)]);
    for (int k = 0; k < n_scan; ++k) scans[size_t(k)].push_back(std::move(outs[size_t(1 + n_carried + k)]));
  }
  for (int i = 0; i < n_carried; ++i) ctx.set_output(i, carried[size_t(i)]);
  for (int k = 0; k < n_scan; ++k) {
    if (!scans[size_t(k)].empty()) {
      ctx.set_output(n_carried + k, stack(ctx, scans[size_t(k)], size_t(k)));
      continue;
    }
    // No iteration ran: an empty tensor with the type and shape the body declares.
    const ir::Value& v = body.values[size_t(body.outputs[size_t(1 + n_carried + k)])];
    Shape s{0};
    if (v.shape)
      for (const ir::Dim& d : *v.shape) s.push_back(d.known() ? d.value : 0);
    if (!dtype_supported(v.dtype)) ctx.fail("scan output ", k, " has no declared type for a loop that ran 0 times");
    ctx.output(n_carried + k, v.dtype, s);
  }
}

}  // namespace

KESTREL_OP(If, {.run = run_if, .half_native = true});
KESTREL_OP(Loop, {.run = run_loop, .half_native = true});

}  // namespace kestrel::ops

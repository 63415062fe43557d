// BatchNormalization (inference), InstanceNormalization, LayerNormalization,
// GroupNormalization, LpNormalization and MeanVarianceNormalization.
// Statistics accumulate in double: a float32 running sum over a long row
// loses digits the tests (and models) notice.
#include <cmath>

#include "ops/reduce_util.h"

namespace kestrel::ops {
namespace {

struct Stats { double mean, inv_std; };

// Mean and 1/sqrt(var + eps) of n contiguous floats (two passes: no cancellation).
Stats row_stats(const float* x, int64_t n, double eps) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  double mean = n ? s / double(n) : 0;
  double v = 0;
  for (int64_t i = 0; i < n; ++i) v += (x[i] - mean) * (x[i] - mean);
  double var = n ? v / double(n) : 0;
  return {mean, 1.0 / std::sqrt(var + eps)};
}

void require_float(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DType::Float32)
    ctx.fail(what, " has element type ", dtype_name(t.dtype()), "; only float32 and float16 are supported");
}

// Channel count and the elements per (sample, channel) of an [N, C, ...] tensor.
void nc_layout(const KernelContext& ctx, const Tensor& x, int64_t* n, int64_t* c, int64_t* s) {
  if (x.rank() < 2) ctx.fail("input must have at least 2 dims [N, C, ...], got ", shape_str(x.shape()));
  *n = x.dim(0);
  *c = x.dim(1);
  *s = (*n != 0 && *c != 0) ? x.numel() / (*n * *c) : 0;
}

// A float32 parameter read as `count` values; fails unless it has exactly that many.
std::vector<float> param(const KernelContext& ctx, int i, int64_t count, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != count)
    ctx.fail(what, " (input ", i, ") has shape ", shape_str(t.shape()), " but ", count, " values are needed");
  return t.to_f32();
}

void run_batch_norm(KernelContext& ctx) {
  if (ctx.node.attr_i("training_mode", 0))
    ctx.fail("training_mode=1 is not supported (Kestrel runs inference only)");
  const Tensor& x = ctx.input(0);
  require_float(ctx, x, "X");
  int64_t n = x.rank() > 0 ? x.dim(0) : 1, c = x.rank() > 1 ? x.dim(1) : 1;
  int64_t s = (n != 0 && c != 0) ? x.numel() / (n * c) : 0;
  // Opsets 7 and 8 allow spatial=0: statistics per element of [C, D1, ...].
  bool per_elem = ctx.node.opset < 9 && ctx.node.attr_i("spatial", 1) == 0;
  int64_t pc = per_elem ? c * s : c;
  std::vector<float> scale = param(ctx, 1, pc, "scale"), bias = param(ctx, 2, pc, "B"),
                     mean = param(ctx, 3, pc, "mean"), var = param(ctx, 4, pc, "var");
  double eps = ctx.node.attr_f("epsilon", 1e-5f);
  // y = x * a + b per parameter index.
  std::vector<float> a(static_cast<size_t>(pc)), b(static_cast<size_t>(pc));
  for (int64_t i = 0; i < pc; ++i) {
    double k = scale[size_t(i)] / std::sqrt(double(var[size_t(i)]) + eps);
    a[size_t(i)] = float(k);
    b[size_t(i)] = float(bias[size_t(i)] - mean[size_t(i)] * k);
  }
  Tensor& y = ctx.output(0, DType::Float32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  parallel_for(ctx, n * c, 1 + (1 << 14) / std::max<int64_t>(1, s), [&](int64_t nc) {
    int64_t ch = nc % std::max<int64_t>(c, 1);
    const float* xi = xp + nc * s;
    float* yi = yp + nc * s;
    if (per_elem) {
      const float* ai = a.data() + ch * s;
      const float* bi = b.data() + ch * s;
      for (int64_t i = 0; i < s; ++i) yi[i] = xi[i] * ai[i] + bi[i];
    } else {
      float ak = a[size_t(ch)], bk = b[size_t(ch)];
      for (int64_t i = 0; i < s; ++i) yi[i] = xi[i] * ak + bk;
    }
  });
}

void run_instance_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  require_float(ctx, x, "input");
  int64_t n, c, s;
  nc_layout(ctx, x, &n, &c, &s);
  std::vector<float> scale = param(ctx, 1, c, "scale"), bias = param(ctx, 2, c, "B");
  double eps = ctx.node.attr_f("epsilon", 1e-5f);
  Tensor& y = ctx.output(0, DType::Float32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  parallel_for(ctx, n * c, 1 + (1 << 14) / std::max<int64_t>(1, s), [&](int64_t nc) {
    int64_t ch = nc % c;
    Stats st = row_stats(xp + nc * s, s, eps);
    float k = float(st.inv_std * scale[size_t(ch)]);
    float b = float(bias[size_t(ch)] - st.mean * st.inv_std * scale[size_t(ch)]);
    for (int64_t i = 0; i < s; ++i) yp[nc * s + i] = xp[nc * s + i] * k + b;
  });
}

// Expands a parameter that broadcasts (numpy-style) to `shape` into one value per element.
std::vector<float> expand_to(const KernelContext& ctx, const Tensor& t, const Shape& shape, const char* what) {
  if (t.rank() > int(shape.size())) ctx.fail(what, " shape ", shape_str(t.shape()), " does not broadcast to ", shape_str(shape));
  for (int k = 1; k <= t.rank(); ++k) {
    int64_t d = t.shape()[size_t(t.rank() - k)], want = shape[shape.size() - size_t(k)];
    if (d != 1 && d != want) ctx.fail(what, " shape ", shape_str(t.shape()), " does not broadcast to ", shape_str(shape));
  }
  std::vector<float> src = t.to_f32(), out(size_t(shape_numel(shape)));
  std::vector<int64_t> st = broadcast_strides(t.shape(), shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t o = 0;
    for (size_t k = 0; k < shape.size(); ++k) o += idx[k] * st[k];
    out[i] = src[size_t(o)];
    for (size_t k = shape.size(); k-- > 0;)
      if (++idx[k] < shape[k]) break;
      else idx[k] = 0;
  }
  return out;
}

void run_layer_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  require_float(ctx, x, "X");
  int rank = x.rank();
  int axis = normalize_axis(ctx, ctx.node.attr_i("axis", -1), rank);
  double eps = ctx.node.attr_f("epsilon", 1e-5f);
  Shape norm_shape(x.shape().begin() + axis, x.shape().end()), stat_shape = x.shape();
  int64_t inner = shape_numel(norm_shape), outer = 1;
  for (int i = 0; i < rank; ++i) {
    if (i < axis) outer *= x.dim(i);
    else stat_shape[size_t(i)] = 1;
  }
  std::vector<float> scale = expand_to(ctx, ctx.input(1), norm_shape, "Scale");
  std::vector<float> bias = ctx.has_input(2) ? expand_to(ctx, ctx.input(2), norm_shape, "B")
                                             : std::vector<float>(size_t(inner), 0.0f);
  Tensor& y = ctx.output(0, DType::Float32, x.shape());
  float* mean_out = ctx.wants_output(1) ? ctx.output(1, DType::Float32, stat_shape).data<float>() : nullptr;
  float* inv_out = ctx.wants_output(2) ? ctx.output(2, DType::Float32, stat_shape).data<float>() : nullptr;
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  parallel_for(ctx, outer, 1 + (1 << 14) / std::max<int64_t>(1, inner), [&](int64_t o) {
    const float* xi = xp + o * inner;
    float* yi = yp + o * inner;
    Stats st = row_stats(xi, inner, eps);
    float m = float(st.mean), r = float(st.inv_std);
    for (int64_t i = 0; i < inner; ++i) yi[i] = (xi[i] - m) * r * scale[size_t(i)] + bias[size_t(i)];
    if (mean_out) mean_out[o] = m;
    if (inv_out) inv_out[o] = r;
  });
}

void run_group_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  require_float(ctx, x, "X");
  int64_t n, c, s;
  nc_layout(ctx, x, &n, &c, &s);
  int64_t groups = ctx.node.attr_i("num_groups", 0);
  if (groups <= 0 || c % groups) ctx.fail("num_groups ", groups, " must be positive and divide the channel count ", c);
  // Opset 18 has one scale per group, opset 21 one per channel; accept either by size.
  int64_t pn = ctx.input(1).numel();
  if (pn != c && pn != groups) ctx.fail("scale has ", pn, " values; expected ", c, " (channels) or ", groups, " (groups)");
  std::vector<float> scale = param(ctx, 1, pn, "scale"), bias = param(ctx, 2, pn, "bias");
  double eps = ctx.node.attr_f("epsilon", 1e-5f);
  int64_t cg = c / groups, len = cg * s;
  Tensor& y = ctx.output(0, DType::Float32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  parallel_for(ctx, n * groups, 1 + (1 << 14) / std::max<int64_t>(1, len), [&](int64_t ng) {
    int64_t g = ng % groups;
    Stats st = row_stats(xp + ng * len, len, eps);
    for (int64_t k = 0; k < cg; ++k) {
      size_t pi = size_t(pn == c ? g * cg + k : g);
      float a = float(st.inv_std * scale[pi]), b = float(bias[pi] - st.mean * st.inv_std * scale[pi]);
      const float* xi = xp + ng * len + k * s;
      float* yi = yp + ng * len + k * s;
      for (int64_t i = 0; i < s; ++i) yi[i] = xi[i] * a + b;
    }
  });
}

void run_lp_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  require_float(ctx, x, "input");
  int64_t p = ctx.node.attr_i("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got ", p);
  std::vector<bool> mask = axes_mask(ctx, {ctx.node.attr_i("axis", -1)}, x.rank());
  ReducePlan plan = make_reduce_plan(x.shape(), mask);
  Tensor& y = ctx.output(0, DType::Float32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  parallel_for(ctx, plan.groups, 1 + (1 << 14) / std::max<int64_t>(1, plan.count), [&](int64_t g) {
    int64_t b = plan.base(g);
    double norm = 0;
    for (int64_t o : plan.off) norm += p == 1 ? std::fabs(xp[b + o]) : double(xp[b + o]) * xp[b + o];
    if (p == 2) norm = std::sqrt(norm);
    // A zero vector stays zero rather than becoming 0/0.
    float inv = norm > 0 ? float(1.0 / norm) : 0.0f;
    for (int64_t o : plan.off) yp[b + o] = xp[b + o] * inv;
  });
}

void run_mvn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  require_float(ctx, x, "input");
  std::vector<bool> mask = axes_mask(ctx, ctx.node.attr_ints("axes", {0, 2, 3}), x.rank());
  ReducePlan plan = make_reduce_plan(x.shape(), mask);
  Tensor& y = ctx.output(0, DType::Float32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  parallel_for(ctx, plan.groups, 1 + (1 << 14) / std::max<int64_t>(1, plan.count), [&](int64_t g) {
    int64_t b = plan.base(g);
    double s = 0, q = 0;
    for (int64_t o : plan.off) s += xp[b + o];
    double mean = plan.count ? s / double(plan.count) : 0;
    for (int64_t o : plan.off) q += (xp[b + o] - mean) * (xp[b + o] - mean);
    // ONNX's definition: (x - mean) / (sqrt(var) + 1e-9).
    double inv = 1.0 / (std::sqrt(plan.count ? q / double(plan.count) : 0) + 1e-9);
    for (int64_t o : plan.off) yp[b + o] = float((xp[b + o] - mean) * inv);
  });
}

}  // namespace

KESTREL_OP(BatchNormalization, {.min_opset = 7, .run = run_batch_norm});
KESTREL_OP(InstanceNormalization, {.run = run_instance_norm});
KESTREL_OP(LayerNormalization, {.min_opset = 17, .run = run_layer_norm});
KESTREL_OP(GroupNormalization, {.min_opset = 18, .run = run_group_norm});
KESTREL_OP(LpNormalization, {.run = run_lp_norm});
KESTREL_OP(MeanVarianceNormalization, {.min_opset = 9, .run = run_mvn});

}  // namespace kestrel::ops

// Data-movement kernels that are strided copies (shaders/copy_nd.comp, and
// shaders/transpose2d.comp for batched 2-D transposes): Transpose, Concat,
// Split, Slice, Expand, Tile, DepthToSpace and SpaceToDepth. Semantics follow
// the CPU kernels in src/ops (transpose.cpp, concat_split.cpp, slice.cpp,
// expand_tile.cpp, depth_space.cpp).
#include <algorithm>
#include <climits>

#include "backends/vulkan/ops/geom_context.h"
#include "backends/vulkan/ops/movement.h"
#include "ops/slice_util.h"
#include "ops/split_util.h"

namespace kestrel::vulkan {

std::vector<int64_t> row_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int k = int(s.size()) - 2; k >= 0; --k) st[size_t(k)] = st[size_t(k + 1)] * s[size_t(k + 1)];
  return st;
}

CopyView dense_view(const Shape& dims, std::vector<int64_t> src_strides, int64_t src_base) {
  CopyView v;
  v.dims = dims;
  v.src_strides = std::move(src_strides);
  v.dst_strides = row_strides(dims);
  v.src_base = src_base;
  return v;
}

std::vector<int64_t> host_ints(const OpContext& ctx, int i) { return ctx.host_input(i).to_i64(); }

bool ints_from_input_or_attr(const OpContext& ctx, int i, int input_since, const char* attr,
                             std::vector<int64_t>& out) {
  if (ctx.node.opset >= input_since) {
    if (!ctx.has_input(i)) return false;
    out = host_ints(ctx, i);
    return true;
  }
  if (!ctx.node.has(attr)) return false;
  out = ctx.node.attr_ints(attr);
  return true;
}

void require_i32_indexing(const OpContext& ctx, int64_t elements) {
  if (elements > INT32_MAX) ctx.unsupported(elements, " elements are past the kernels' int32 indexing");
}

namespace {

struct CopyPush {
  uint32_t base, n;
  int32_t sbase, dbase;
  int32_t dims[kMaxRank], ss[kMaxRank], ds[kMaxRank], smod[kMaxRank];
};

// Drops size-1 dims and merges neighbours that are contiguous in both the
// source and the destination (and do not wrap).
CopyView simplify(const CopyView& v) {
  bool tile = !v.src_mod.empty();
  CopyView s;
  s.src_base = v.src_base;
  s.dst_base = v.dst_base;
  for (size_t k = 0; k < v.dims.size(); ++k) {
    int64_t d = v.dims[k], m = tile ? v.src_mod[k] : d;
    if (d == 1) continue;
    bool plain = m == d;
    if (!s.dims.empty() && plain && s.src_mod.back() == s.dims.back() &&
        s.src_strides.back() == v.src_strides[k] * d && s.dst_strides.back() == v.dst_strides[k] * d) {
      s.dims.back() *= d;
      s.src_mod.back() = s.dims.back();
      s.src_strides.back() = v.src_strides[k];
      s.dst_strides.back() = v.dst_strides[k];
      continue;
    }
    s.dims.push_back(d);
    s.src_strides.push_back(v.src_strides[k]);
    s.dst_strides.push_back(v.dst_strides[k]);
    s.src_mod.push_back(m);
  }
  return s;
}

// [B, R, C] -> [B, C, R] with the tiled shader when the view is one.
bool try_transpose2d(OpContext& ctx, const GpuTensor& src, const GpuTensor& dst, const CopyView& v) {
  size_t r = v.dims.size();
  if (r < 2 || r > 3 || v.src_base || v.dst_base) return false;
  for (size_t k = 0; k < r; ++k)
    if (v.src_mod[k] != v.dims[k]) return false;
  int64_t cols = v.dims[r - 2], rows = v.dims[r - 1], batch = r == 3 ? v.dims[0] : 1;
  if (v.src_strides[r - 2] != 1 || v.src_strides[r - 1] != cols || v.dst_strides[r - 1] != 1 ||
      v.dst_strides[r - 2] != rows)
    return false;
  if (r == 3 && (v.src_strides[0] != rows * cols || v.dst_strides[0] != rows * cols)) return false;
  uint32_t gx = uint32_t((cols + 31) / 32), gy = uint32_t((rows + 31) / 32);
  const auto& lim = ctx.device().max_workgroup_count;
  if (gx > lim[0] || gy > lim[1]) return false;
  // One dispatch per chunk of planes keeps each bounded (about 4M elements).
  int64_t per = std::clamp<int64_t>((int64_t(1) << 22) / (rows * cols), 1, lim[2]);
  for (int64_t b0 = 0; b0 < batch; b0 += per) {
    uint32_t push[3] = {uint32_t(rows), uint32_t(cols), uint32_t(b0)};
    ctx.dispatch("transpose2d", {wide(src)}, {In(src), Out(dst)}, push, sizeof push, gx, gy,
                 uint32_t(std::min(per, batch - b0)));
  }
  return true;
}

}  // namespace

void record_copy(OpContext& ctx, const GpuTensor& src, const GpuTensor& dst, const CopyView& view) {
  if (src.is_float() != dst.is_float()) ctx.fail("copy between float and integer storage");
  int64_t n = shape_numel(view.dims);
  if (n == 0) return;
  require_i32_indexing(ctx, std::max(src.numel(), dst.numel()));
  CopyView v = view;
  if (v.src_mod.empty()) v.src_mod = v.dims;
  v = simplify(v);
  if (v.dims.size() > size_t(kMaxRank)) ctx.unsupported("a copy of rank ", v.dims.size(), " after merging dims");
  if (try_transpose2d(ctx, src, dst, v)) return;
  bool tile = false;
  for (size_t k = 0; k < v.dims.size(); ++k) tile |= v.src_mod[k] != v.dims[k];
  CopyPush p{};
  int pad = kMaxRank - int(v.dims.size());
  for (int k = 0; k < kMaxRank; ++k) {
    bool real = k >= pad;
    size_t j = size_t(k - pad);
    p.dims[k] = real ? int32_t(v.dims[j]) : 1;
    p.ss[k] = real ? int32_t(v.src_strides[j]) : 0;
    p.ds[k] = real ? int32_t(v.dst_strides[j]) : 0;
    p.smod[k] = real ? int32_t(v.src_mod[j]) : 1;
  }
  p.sbase = int32_t(v.src_base);
  p.dbase = int32_t(v.dst_base);
  ctx.dispatch_elements("copy_nd", {wide(src), tile ? 1 : 0, int32_t(std::max<size_t>(1, v.dims.size()))},
                        {In(src), Out(dst)}, &p, sizeof p, uint64_t(n));
}

namespace {

void transpose(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  int r = int(x.shape.size());
  std::vector<int64_t> perm = ctx.node.attr_ints("perm");
  if (perm.empty())
    for (int k = r - 1; k >= 0; --k) perm.push_back(k);
  if (int(perm.size()) != r) ctx.fail("perm ", shape_str(perm), " does not match input ", shape_str(x.shape));
  std::vector<bool> seen(size_t(r), false);
  Shape out;
  std::vector<int64_t> in_st = row_strides(x.shape), st;
  for (int64_t p : perm) {
    int a = norm_axis(ctx, p, r);
    if (seen[size_t(a)]) ctx.fail("perm ", shape_str(perm), " repeats axis ", a);
    seen[size_t(a)] = true;
    out.push_back(x.shape[size_t(a)]);
    st.push_back(in_st[size_t(a)]);
  }
  GpuTensor& y = ctx.output(0, x.dtype, out);
  record_copy(ctx, x, y, dense_view(out, st));
}

void concat(OpContext& ctx) {
  const GpuTensor& first = ctx.input(0);
  int r = int(first.shape.size());
  if (!ctx.node.has("axis")) ctx.fail("the axis attribute is required");
  int axis = norm_axis(ctx, ctx.node.attr_i("axis", 0), r);
  Shape out = first.shape;
  out[size_t(axis)] = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const GpuTensor& t = ctx.input(i);
    if (t.dtype != first.dtype)
      ctx.fail("input ", i, " is ", dtype_name(t.dtype), " but input 0 is ", dtype_name(first.dtype));
    bool ok = int(t.shape.size()) == r;
    for (int k = 0; ok && k < r; ++k) ok = k == axis || t.shape[size_t(k)] == first.shape[size_t(k)];
    if (!ok) ctx.fail("input ", i, " ", shape_str(t.shape), " does not match input 0 ", shape_str(first.shape));
    out[size_t(axis)] += t.shape[size_t(axis)];
  }
  require_i32_indexing(ctx, shape_numel(out));
  GpuTensor& y = ctx.output(0, first.dtype, out);
  std::vector<int64_t> out_st = row_strides(out);
  int64_t at = 0;
  // One copy per input into its slice of the output.
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const GpuTensor& t = ctx.input(i);
    CopyView v;
    v.dims = t.shape;
    v.src_strides = row_strides(t.shape);
    v.dst_strides = out_st;
    v.dst_base = at * out_st[size_t(axis)];
    record_copy(ctx, t, y, v);
    at += t.shape[size_t(axis)];
  }
}

void split(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  int axis = norm_axis(ctx, ctx.node.attr_i("axis", 0), int(x.shape.size()));
  std::vector<int64_t> given;
  bool has_split = ints_from_input_or_attr(ctx, 1, 13, "split", given);
  GeomContext g(ctx.node);
  std::vector<int64_t> sizes =
      ops::split_sizes(g, x.shape[size_t(axis)], has_split ? std::optional(given) : std::nullopt);
  std::vector<int64_t> in_st = row_strides(x.shape);
  int64_t start = 0;
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    Shape out = x.shape;
    out[size_t(axis)] = sizes[size_t(i)];
    GpuTensor& y = ctx.output(i, x.dtype, out);
    record_copy(ctx, x, y, dense_view(out, in_st, start * in_st[size_t(axis)]));
    start += sizes[size_t(i)];
  }
}

void slice(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  GeomContext g(ctx.node);
  ops::SliceArgs args = ops::read_slice_args(
      g, [&](int i) { return ctx.has_input(i); }, [&](int i, const char*) { return host_ints(ctx, i); });
  ops::SliceView v = ops::slice_view(g, x.shape, std::move(args));
  if (v.widest_step > INT32_MAX || v.widest_step < -INT32_MAX)
    ctx.unsupported("step ", v.widest_step, " is past int32 indexing");
  GpuTensor& y = ctx.output(0, x.dtype, v.out);
  record_copy(ctx, x, y, dense_view(v.out, v.strides, v.base));
}

void expand(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  Shape out = broadcast_pair(ctx, x.shape, host_ints(ctx, 1));
  require_rank(ctx, out);
  GpuTensor& y = ctx.output(0, x.dtype, out);
  Dims6 s = broadcast_strides6(x.shape, out);
  record_copy(ctx, x, y, dense_view(out, std::vector<int64_t>(s.d + kMaxRank - out.size(), s.d + kMaxRank)));
}

void tile(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  std::vector<int64_t> reps = host_ints(ctx, 1);
  if (reps.size() != x.shape.size())
    ctx.fail("repeats ", shape_str(reps), " must have one entry per axis of input ", shape_str(x.shape));
  Shape out;
  for (size_t k = 0; k < reps.size(); ++k) {
    if (reps[k] < 0) ctx.fail("repeats ", shape_str(reps), " has a negative entry");
    out.push_back(reps[k] * x.shape[k]);
  }
  require_i32_indexing(ctx, shape_numel(out));
  GpuTensor& y = ctx.output(0, x.dtype, out);
  CopyView v = dense_view(out, row_strides(x.shape));
  v.src_mod = x.shape;
  record_copy(ctx, x, y, v);
}

struct Nchw {
  int64_t n, c, h, w, b;
};
Nchw nchw(const OpContext& ctx, const GpuTensor& x) {
  if (x.shape.size() != 4) ctx.fail("input must be 4-D (NCHW), got ", shape_str(x.shape));
  int64_t b = ctx.node.attr_i("blocksize", 0);
  if (b <= 0) ctx.fail("blocksize must be positive, got ", b);
  return {x.shape[0], x.shape[1], x.shape[2], x.shape[3], b};
}

void depth_to_space(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  auto [n, c, h, w, b] = nchw(ctx, x);
  if (c % (b * b)) ctx.fail("channels ", c, " are not divisible by blocksize^2 = ", b * b);
  int64_t oc = c / (b * b), hw = h * w;
  bool crd = ctx.node.opset >= 11 && ctx.node.attr_s("mode", "DCR") == "CRD";
  // Output viewed as [n, oc, h, b1, w, b2]; the input channel is
  // b1*b*oc + b2*oc + c' (DCR) or c'*b*b + b1*b + b2 (CRD).
  int64_t s_oc = crd ? b * b * hw : hw, s_b1 = crd ? b * hw : b * oc * hw, s_b2 = crd ? hw : oc * hw;
  GpuTensor& y = ctx.output(0, x.dtype, {n, oc, h * b, w * b});
  record_copy(ctx, x, y, dense_view({n, oc, h, b, w, b}, {c * hw, s_oc, w, s_b1, 1, s_b2}));
}

void space_to_depth(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  auto [n, c, h, w, b] = nchw(ctx, x);
  if (h % b || w % b) ctx.fail("spatial size ", h, "x", w, " is not divisible by blocksize ", b);
  int64_t oh = h / b, ow = w / b;
  // Output viewed as [n, b1, b2, c, oh, ow] reading x[n, c, oh*b + b1, ow*b + b2].
  GpuTensor& y = ctx.output(0, x.dtype, {n, c * b * b, oh, ow});
  record_copy(ctx, x, y, dense_view({n, b, b, c, oh, ow}, {c * h * w, w, 1, h * w, b * w, b}));
}

}  // namespace

KESTREL_VK_OP(Transpose, {.record = transpose});
KESTREL_VK_OP(Concat, {.record = concat});
KESTREL_VK_OP(Split, {.record = split, .host_inputs = {1}});
KESTREL_VK_OP(Slice, {.record = slice, .host_inputs = {1, 2, 3, 4}});
KESTREL_VK_OP(Expand, {.min_opset = 8, .record = expand, .host_inputs = {1}});
KESTREL_VK_OP(Tile, {.min_opset = 6, .record = tile, .host_inputs = {1}});
KESTREL_VK_OP(DepthToSpace, {.record = depth_to_space});
KESTREL_VK_OP(SpaceToDepth, {.record = space_to_depth});

}  // namespace kestrel::vulkan
